package sites

import (
	"slices"
	"strings"

	"github.com/wirelab/wirelab/engine/probe"
	"github.com/wirelab/wirelab/engine/server"
)

// Expectation is what a correct probe reports for one protocol of a site.
type Expectation struct {
	Announced   *bool    `json:"announced"` // nil for h1 (it has no announcement)
	AnnouncedBy []string `json:"announced_by"`
	Served      bool     `json:"served"`
}

// Expected is derived from the site's description alone (not from any probe): what each protocol
// must be reported as, or refused = true when the probe must not contact the site at all.
func (s Site) Expected() (protocols map[string]Expectation, refused bool) {
	if s.Addr.IsValid() {
		return nil, true
	}
	has := func(p server.Protocol) bool { return slices.Contains(s.Protocols, p) }
	tls := !s.TLSReset
	var rrALPN []string
	defaultALPN := false
	for _, h := range s.HTTPS {
		if h.Priority > 0 {
			rrALPN = append(rrALPN, h.ALPN...)
			defaultALPN = defaultALPN || !h.NoDefaultALPN
		}
	}
	by := map[string][]string{}
	add := func(proto string, ok bool, how string) {
		if ok {
			by[proto] = append(by[proto], how)
		}
	}
	add(probe.H2, has(server.H2) && tls, probe.ByALPN)
	add(probe.H2, slices.Contains(rrALPN, "h2"), probe.ByHTTPSRR)
	add(probe.H1S, has(server.H1S) && tls, probe.ByALPN)
	add(probe.H1S, slices.Contains(rrALPN, "http/1.1"), probe.ByHTTPSRR)
	add(probe.H1S, defaultALPN, probe.ByDefault)
	add(probe.H2C, s.H2CUpgrade, probe.ByUpgrade)
	add(probe.H3, strings.HasPrefix(s.AltSvc, `h3="`), probe.ByAltSvc)
	add(probe.H3, slices.Contains(rrALPN, "h3"), probe.ByHTTPSRR)
	add(probe.SPDY3, has(server.SPDY3) && tls, probe.ByALPN)
	served := map[string]bool{
		probe.H1: has(server.H1), probe.H1S: has(server.H1S) && tls, probe.H2: has(server.H2) && tls,
		probe.H2C: s.H2CUpgrade, probe.H3: has(server.H3), probe.SPDY3: has(server.SPDY3) && tls,
	}
	out := map[string]Expectation{}
	for _, p := range probe.Protocols {
		e := Expectation{AnnouncedBy: by[p], Served: served[p]}
		if e.AnnouncedBy == nil {
			e.AnnouncedBy = []string{}
		}
		slices.Sort(e.AnnouncedBy)
		if p != probe.H1 {
			a := len(e.AnnouncedBy) > 0
			e.Announced = &a
		}
		out[p] = e
	}
	return out, false
}
