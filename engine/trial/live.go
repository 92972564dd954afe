package trial

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wirelab/wirelab/engine/egress"
	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/pktlog"
	"github.com/wirelab/wirelab/engine/policy"
	"github.com/wirelab/wirelab/engine/probe"
	"github.com/wirelab/wirelab/engine/sites"
	"github.com/wirelab/wirelab/engine/spec"
)

// Live pages (docs/live.md): `page = "url:https://…"` loads a site's page as the site serves it —
// no page model, the loader discovers the objects — over the emulated path, so that a live load's
// packet log, captures and Time on Wire are an emulated load's. Behind the path is the egress
// router (docs/egress.md), whose far side is the run's local internet (*.wirelab.test:
// engine/sites; no flag needed) or, for a public site, the host and its way out (allow_internet,
// set only by --allow-internet).

// MinPublicGapMs is the least gap_ms between two loads of a public site: a live trial is polite to
// the site it measures (study E's loads were 2 s apart).
const MinPublicGapMs = 1000

// LivePrefix starts a live page.
const LivePrefix = "url:"

// IsLive reports whether a page names a live URL.
func IsLive(pageName string) bool { return strings.HasPrefix(pageName, LivePrefix) }

// Live is a live page after Prepare.
type Live struct {
	URL   *url.URL // normalised (lower-case scheme and host, path at least "/")
	Host  string
	Local bool // a site of the local internet (*.wirelab.test); else a public site
}

// LoadURL is the page's URL for one protocol: http for h1 and h2c, https for the others (the same
// rule as for emulated pages); host, path and query as given.
func (l *Live) LoadURL(protocol string) string {
	u := *l.URL
	u.Scheme = page.Scheme(protocol)
	return u.String()
}

// ParseLive checks a live page and the policy's first half, before anything exists: a public site
// without allowInternet is refused here (no query is sent for its name); a public address that is
// special-purpose (private, loopback, documentation, …) is refused even with it.
func ParseLive(pageName string, allowInternet bool) (*Live, error) {
	raw := strings.TrimPrefix(pageName, LivePrefix)
	if !strings.Contains(raw, "://") {
		return nil, fielderr.New("page", pageName, "a live page is url: and an http:// or https:// URL (url:https://h3.wirelab.test/L/fixture/)")
	}
	site, err := probe.ParseSite("page", raw)
	if err != nil {
		return nil, err
	}
	if site.Port != 0 {
		return nil, fielderr.New("page", pageName, "a live page's URL has no port: each load uses its protocol's (80 for h1 and h2c, 443 for the others)")
	}
	local := !site.IsIP() && policy.IsLabName(site.Host)
	switch {
	case !local && !allowInternet:
		return nil, fielderr.New("page", pageName, "%s is not a site of the local internet: public sites are loaded only with --allow-internet (wirelab run or wirelab load); without it only *.%s names of the run (wirelab-engine sites ls)",
			site.Host, policy.LabDomain)
	case !local && site.IsIP():
		if name, special := policy.SpecialPurpose(site.Addr); special {
			return nil, fielderr.New("page", pageName, "%s is a special-purpose address (%s): a public site must be public, even with --allow-internet", site.Addr, name)
		}
		return &Live{URL: site.URL, Host: site.Host}, nil
	case !local:
		return &Live{URL: site.URL, Host: site.Host}, nil
	}
	if _, ok := sites.Find(site.Host); !ok {
		var names []string
		for _, s := range sites.Catalog() {
			names = append(names, s.Name)
		}
		return nil, fielderr.New("page", pageName, "%s is not a site of the local internet; its sites are %s", site.Host, strings.Join(names, ", "))
	}
	return &Live{URL: site.URL, Host: site.Host, Local: local}, nil
}

// checkLiveKnobs refuses the knobs a live page cannot honour: it is served by its site (no server
// knob applies), has no page model (no shards, objects, replay or priorities) and its names are
// the site's DNS's.
func checkLiveKnobs(s *Spec) error {
	switch {
	case s.Shards != 1 || s.ShardMode != "round-robin":
		return fielderr.New("shards", s.Shards, "a live page is its site's as served: shards must be 1 (shard_mode round-robin)")
	case !reflect.DeepEqual(s.Server, spec.DefaultServer("builtin")):
		return fielderr.New("server", "…", "a live page is served by its site: no server knob applies; leave the server table out")
	case s.Client.Mode != "flat":
		return fielderr.New("client.mode", s.Client.Mode, "a live page has no page model: its objects are discovered from what the site serves; the mode must be flat")
	case s.Client.Priority != "none":
		return fielderr.New("client.priority", s.Client.Priority, "needs a page model; with a live page it must be none")
	case s.Client.DNS != "server":
		return fielderr.New("client.dns", s.Client.DNS, "a live page's names are the sites' DNS's: it must be server")
	case s.Client.Impl == "chromium" && !s.Capture.HAR:
		return fielderr.New("capture.har", s.Capture.HAR, "a live load by Chromium is checked against its HAR (the protocol each response was spoken over): it must be true")
	}
	return nil
}

// checkPublicKnobs refuses what a public site cannot take: loads closer together than
// MinPublicGapMs, and the impairments that act on the servers' side of the path, which is the
// site's (its TCP windows, congestion control and per-origin delay are its own).
func checkPublicKnobs(s *Spec, r profile.Resolved) error {
	switch {
	case s.GapMs < MinPublicGapMs:
		return fielderr.New("gap_ms", s.GapMs, "loads of a public site are at least %d ms apart (study E's were 2000)", MinPublicGapMs)
	case r.IW != 0:
		return fielderr.New("network", s.Network, "iw sets the servers' initial window; a public site's servers are its own")
	case r.TCPPlus != 0:
		return fielderr.New("network", s.Network, "tcpplus acts on the servers' side; a public site's servers are its own")
	case len(r.OriginExtraRTT) > 0:
		return fielderr.New("network", s.Network, "origin_delay needs the page's origins; a public site's addresses have no origin number")
	}
	return nil
}

// prepareLive is Prepare for a live page: the lab's path is the spec's profile — for the local
// internet with its sites' extra round trips as origin_delay — in front of the egress router.
func prepareLive(s *Spec) (*Prepared, error) {
	live, err := ParseLive(s.Page, s.AllowInternet)
	if err != nil {
		return nil, err
	}
	if err := checkLiveKnobs(s); err != nil {
		return nil, err
	}
	far := lab.FarHost
	if live.Local {
		far = lab.FarInternet
	}
	lp, err := lab.PrepareLive(far, s.Network, s.Seed)
	if err != nil {
		return nil, err
	}
	if !live.Local {
		if err := checkPublicKnobs(s, lp.Profile); err != nil {
			return nil, err
		}
	}
	return completed(s, lp, live), nil
}

// liveFiles are what a live load's loader needs of the local internet: its CA (the engine's
// loader), its sites' certificate's SPKI hash (Chromium), and where the HAR goes.
type liveFiles struct {
	CAFile, SPKI, HAR string
}

// liveLoaderArgs are the loader's flags of one live load: the page's URL for the protocol, the
// run's DNS server (the sites' zone), the sites' certificate; fetch (flat) or browse.
func liveLoaderArgs(p *Prepared, l Load, files liveFiles) []string {
	s := p.Spec
	https := page.Scheme(l.Protocol) == "https"
	timeout := time.Duration(s.Client.TimeoutS * float64(time.Second))
	if s.Client.Impl == "chromium" {
		b := seam.DefaultBrowse()
		b.URL, b.Proto, b.JSON, b.HAR, b.Timeout = p.Live.LoadURL(l.Protocol), l.Protocol, true, files.HAR, timeout
		b.DNS = labaddr.DNSAddr.String()
		if https && p.Live.Local {
			b.SPKI = files.SPKI
		}
		b.AllowInternet = !p.Live.Local
		return b.Args()
	}
	f := seam.DefaultFetch()
	f.URL, f.Proto, f.Mode = p.Live.LoadURL(l.Protocol), l.Protocol, "flat"
	f.MaxConns = s.Client.MaxConnectionsPerOrigin
	f.Timeout = timeout
	f.JSON, f.HAR = true, files.HAR
	f.AcceptPush = false
	f.DNS = labaddr.DNSAddr.String()
	if https && p.Live.Local {
		f.CA = files.CAFile // a public site's certificate is checked against the system's roots
	}
	f.AllowInternet = !p.Live.Local
	return f.Args()
}

// harProtocols are the HAR's httpVersion of a response spoken over each protocol, as Chromium
// writes it.
var harProtocols = map[string]string{"h1": "http/1.1", "h1s": "http/1.1", "h2": "h2", "h3": "h3"}

// spokenOtherwise checks a Chromium load's HAR: Chromium cannot be held to one protocol as the
// engine's loader is (with --proto h2 it still offers http/1.1 in ALPN, and speaks it to a site
// that chooses it), so a live load counts as a load over its protocol only if every response in
// its HAR was spoken over it. It returns the load's error ("" when every response was).
func spokenOtherwise(harPath, protocol string) (string, error) {
	b, err := os.ReadFile(harPath)
	if err != nil {
		return "", fmt.Errorf("the load's HAR: %w", err)
	}
	var h har.File
	if err := json.Unmarshal(b, &h); err != nil || h.Log == nil {
		return "", fmt.Errorf("the load's HAR %s is not HAR: %v", harPath, err)
	}
	want := harProtocols[protocol]
	for _, e := range h.Log.Entries {
		if e.Response.Status == 0 {
			continue // no response: the load's own error says why
		}
		if got := strings.ToLower(e.Response.HTTPVersion); got != want {
			return fmt.Sprintf("protocol: %s was answered over %s, not %s (Chromium fell back; the site does not serve %s)",
				e.Request.URL, got, want, protocol), nil
		}
	}
	return "", nil
}

// EgressEvents logs the DNS forwarder's admissions and refusals and counts the refusals (the
// admissions are the router's set: RouterCounters). Live trials and load tests of a target use it.
type EgressEvents struct {
	mu      sync.Mutex
	log     *EngineLog
	refused int
}

// NewEgressEvents logs to log.
func NewEgressEvents(log *EngineLog) *EgressEvents { return &EgressEvents{log: log} }

// On is lab.Options.OnEgress.
func (e *EgressEvents) On(ev egress.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Event {
	case "admitted":
		e.log.Printf("egress: admitted %s (%s)", ev.Addr, ev.Name)
	case "refused":
		e.refused++
		what := ev.Name
		if ev.Addr != "" {
			what = ev.Addr + " (" + ev.Name + ")"
		}
		e.log.Printf("egress: refused %s: %s", what, ev.Reason)
	}
}

// planLive plans the page's site in the client namespace, once the lab's path to the site exists
// (the egress router, whose far side is the local internet or, for a public site, the host):
// `probe --plan` resolves its name through the router's DNS forwarder and checks every address
// against the probe's policy, sending nothing to the site; a refusal is bad input (exit 2). The
// planned addresses are admitted through the router.
func (r *runner) planLive(ctx context.Context) error {
	args := []string{r.o.Engine, "probe", "--plan", "--dns", labaddr.DNSAddr.String()}
	if r.p.Spec.AllowInternet {
		args = append(args, "--allow-internet")
	}
	cmd := r.emu.Topo.Command(netns.Client, append(args, r.p.Live.URL.String())...)
	var out, errOut bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr = r.o.Env, &out, &errOut
	runErr := cmd.Run()
	cmd.Stdout, cmd.Stderr = nil, nil
	recs := r.emu.Log.Take()
	r.log.Printf("planning: %s", describePackets(recs))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if runErr != nil {
		why := lastLine(errOut.Bytes())
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 2 {
			return fielderr.New("page", r.p.Spec.Page, "refused before any packet was sent to it: %s", strings.TrimPrefix(why, "probe: "))
		}
		return fmt.Errorf("planning the live page: %s", why)
	}
	var pl probe.Planned
	line, _ := bufio.NewReader(&out).ReadBytes('\n')
	if err := json.Unmarshal(line, &pl); err != nil {
		return fmt.Errorf("planning the live page: probe --plan printed %q: %w", line, err)
	}
	if pl.Refused != "" {
		return fielderr.New("page", r.p.Spec.Page, "refused before any packet was sent to it: %s", pl.Refused)
	}
	if pl.Error != "" || pl.Addr == "" {
		return fmt.Errorf("planning the live page: %s does not resolve: %s", pl.Host, pl.Error)
	}
	// The forwarder admitted what the planning query returned; an IP address given as the page's
	// host was never asked for, and is admitted here (it passed the same policy).
	var admit []netip.Addr
	for _, a := range pl.Addrs {
		if x, err := netip.ParseAddr(a); err == nil && x.Unmap().Is4() {
			admit = append(admit, x.Unmap())
		}
	}
	if err := r.emu.Topo.Admit(admit...); err != nil {
		return fmt.Errorf("admit the planned addresses: %w", err)
	}
	r.log.Printf("live page %s: %s resolves to %s; every address passed the policy and is admitted", r.p.Live.URL, pl.Host, strings.Join(pl.Addrs, ", "))
	return nil
}

// egressResult is trial.json's "egress" of a live trial: what the router let through and refused.
func (r *runner) egressResult() *EgressResult {
	if r.egress == nil || r.emu == nil {
		return nil
	}
	return EgressOf(r.emu.Topo, r.egress)
}

// EgressOf is what the router of topo let through and refused, with ev's refusals by the policy;
// nil (logged) when its counters cannot be read.
func EgressOf(topo *netns.Topology, ev *EgressEvents) *EgressResult {
	rc, err := topo.RouterCounters()
	if err != nil {
		ev.log.Printf("egress: counters: %v", err)
		return nil
	}
	res := &EgressResult{Far: topo.Uplink().Far.String(), Admitted: []string{}}
	for _, a := range rc.Admitted {
		res.Admitted = append(res.Admitted, a.String())
	}
	slices.Sort(res.Admitted)
	res.RefusedPackets = int64(rc.Refused)
	ev.mu.Lock()
	res.RefusedByPolicy = ev.refused
	ev.mu.Unlock()
	ev.log.Printf("egress: admitted %s; refused by the policy: %d answers or names; refused by the router: %d packets",
		strings.Join(res.Admitted, ", "), res.RefusedByPolicy, res.RefusedPackets)
	return res
}

// describePackets says what crossed the link: packets per destination address and port.
func describePackets(recs []pktlog.Record) string {
	if len(recs) == 0 {
		return "no packet crossed the link"
	}
	counts := map[string]int{}
	for i := range recs {
		x := &recs[i]
		if x.Dir != pktlog.Up {
			continue
		}
		counts[fmt.Sprintf("%d.%d.%d.%d:%d/%s", x.Dst[0], x.Dst[1], x.Dst[2], x.Dst[3], x.DstPort, protoName(x.Proto))]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d to %s", counts[k], k)
	}
	return fmt.Sprintf("%d packets crossed the link; from the client: %s", len(recs), strings.Join(parts, ", "))
}

func protoName(p uint8) string {
	switch p {
	case pktlog.ProtoTCP:
		return "tcp"
	case pktlog.ProtoUDP:
		return "udp"
	}
	return fmt.Sprintf("ip%d", p)
}
