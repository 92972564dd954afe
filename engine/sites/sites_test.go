package sites

import (
	"testing"

	"github.com/wirelab/wirelab/engine/policy"
	"github.com/wirelab/wirelab/engine/probe"
)

// The catalog covers every behaviour the probe must tell apart, once each.
func TestCatalogCoversEveryCase(t *testing.T) {
	seen := map[string]bool{}
	names := map[string]bool{}
	for _, s := range Catalog() {
		if names[s.Name] || !policy.IsLabName(s.Name) {
			t.Errorf("%s: duplicate or outside the lab's zone", s.Name)
		}
		names[s.Name] = true
		want, refused := s.Expected()
		if refused {
			seen["refused"] = true
			continue
		}
		h3, h2 := want[probe.H3], want[probe.H2]
		switch {
		case *h3.Announced && !h3.Served:
			seen["h3 announced, not served"] = true
		case *h3.Announced && h3.Served && len(s.HTTPS) == 0:
			seen["h3 by alt-svc"] = true
		case len(s.HTTPS) > 0:
			seen["https record"] = true
		}
		if !h2.Served && want[probe.H1S].Served {
			seen["http/1.1 only"] = true
		}
		if h2.Served && want[probe.H2C].Served {
			seen["h2 and h2c"] = true
		}
		if s.TLSReset && !want[probe.H1S].Served && want[probe.H1].Served {
			seen["tls reset"] = true
		}
		if s.ExtraRTT > 0 {
			seen["slow"] = true
		}
		if want[probe.H1].Announced != nil {
			t.Errorf("%s: h1 announced is not null", s.Name)
		}
	}
	for _, c := range []string{"refused", "h3 announced, not served", "h3 by alt-svc", "https record", "http/1.1 only", "h2 and h2c", "tls reset", "slow"} {
		if !seen[c] {
			t.Errorf("no site for %q", c)
		}
	}
}

func TestProfileAddsExtraRTT(t *testing.T) {
	r, err := Profile("rtt=20ms")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range Served(Catalog()) {
		if r.OriginExtraRTT[i+1] != s.ExtraRTT {
			t.Errorf("%s (origin %d): extra %v, want %v", s.Name, i+1, r.OriginExtraRTT[i+1], s.ExtraRTT)
		}
	}
	if _, err := Profile("rtt=oops"); err == nil {
		t.Error("a bad profile was accepted")
	}
}
