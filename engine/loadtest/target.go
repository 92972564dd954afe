package loadtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/userpath"
	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/loadtest/status"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/policy"
	"github.com/wirelab/wirelab/engine/sites"
	"github.com/wirelab/wirelab/engine/trial"
)

// External targets (docs/loadtest.md, "External targets"): the spec's target is loaded instead of
// a lab server, through the emulated access link (the spec's network) and the egress router of
// live pages (docs/egress.md) — its far side the run's local internet (*.wirelab.test: no flag) or
// the host's way out (anything else: only with allow_internet, which only --allow-internet on a
// command line sets). The generator's address policy is loadgen.TargetPolicy; the status page, if
// any, is sampled by this process at the interval boundaries.

// maxCAFile bounds target.ca.
const maxCAFile = 1 << 20

// Target is a load test's external target after Prepare.
type Target struct {
	URL     *url.URL
	Local   bool                  // the run's local internet (*.wirelab.test)
	Resolve map[string]netip.Addr // target.resolve, parsed
	Policy  *policy.Target        // the VUs' address policy (Own filled in the client namespace)
	Status  *status.Source        // nil: the server side is not measured
}

// prepareTarget checks a target and the address policy's first half, creating nothing and
// sending nothing: a host outside loopback and the local internet needs allow_internet; an IP
// literal (of the URL, an origin, or a resolve value) that is special-purpose is refused even with
// it, a private one passes only with it (it is named, by construction).
func prepareTarget(spec *loadgen.Spec) (*Prepared, error) {
	t := spec.Target
	for i, expr := range spec.Thresholds {
		if th, _ := loadgen.ParseThreshold(expr); th.NeedsServer() {
			return nil, fielderr.New(fmt.Sprintf("thresholds[%d]", i), expr, "%s needs the lab server's CPU; an external target's status page does not give it", th.Metric)
		}
	}
	u, err := url.Parse(t.URL)
	if err != nil || u.Hostname() == "" {
		return nil, fielderr.New("target.url", t.URL, "must be an http:// or https:// URL")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if want := page.Scheme(spec.Protocol); u.Scheme != want {
		return nil, fielderr.New("target.url", t.URL, "protocol %s needs an %s:// URL", spec.Protocol, want)
	}
	if u.Port() != "" {
		return nil, fielderr.New("target.url", t.URL, "has no port: the VUs use the protocol's (80 for h1 and h2c, 443 for the others), the ports the egress router passes")
	}
	res := &Target{URL: u, Resolve: map[string]netip.Addr{}}
	for _, name := range slices.Sorted(maps.Keys(t.Resolve)) {
		a, err := netip.ParseAddr(t.Resolve[name])
		if err != nil || !a.Unmap().Is4() {
			return nil, fielderr.New(fmt.Sprintf("target.resolve[%q]", name), t.Resolve[name], "must be an IPv4 address (the egress router forwards IPv4)")
		}
		res.Resolve[strings.ToLower(name)] = a.Unmap()
	}
	res.Policy, err = loadgen.TargetPolicy(u.String(), t.Origins, res.Resolve, spec.AllowInternet, loadgen.RunServerOwn(spec.RunServer, nil))
	if err != nil {
		return nil, fielderr.New("target.origins", t.Origins, "%v", err)
	}
	local := 0
	if spec.RunServer.IsValid() {
		// A generator of a cluster run (--run-server): every host is a name of the run's lab
		// server, resolved to the worker that runs it; the far side is the host's way there.
		for _, h := range res.Policy.Hosts {
			if res.Resolve[h] != spec.RunServer {
				return nil, fielderr.New(fieldOf(h, u), h, "a cluster generator loads only its run's server at %s (--run-server): resolve it there", spec.RunServer)
			}
		}
		goto checked
	}
	for _, h := range res.Policy.Hosts {
		a, err := netip.ParseAddr(h)
		if h == "localhost" || (err == nil && a.Unmap().IsLoopback()) || res.Resolve[h].IsLoopback() {
			return nil, fielderr.New(fieldOf(h, u), h, "loopback is not reachable through the emulated access link from the run's client namespace; serve the target on the local internet or an address of the host, or load it without the link: wirelab-engine loadgen --target")
		}
	}
	// Local: every host a name of the run's local internet, none resolved elsewhere.
	for _, h := range res.Policy.Hosts {
		if policy.IsLabName(h) {
			if _, ok := sites.Find(h); !ok {
				return nil, fielderr.New(fieldOf(h, u), h, "is not a site of the local internet; its sites are %s", sites.Names(sites.Catalog()))
			}
			if _, ok := res.Resolve[h]; ok {
				return nil, fielderr.New(fmt.Sprintf("target.resolve[%q]", h), res.Resolve[h].String(), "a name of the local internet is resolved by its DNS; leave it out")
			}
			local++
		}
	}
	switch {
	case local == len(res.Policy.Hosts):
		res.Local = true
	case local > 0:
		return nil, fielderr.New("target.origins", t.Origins, "mixes the local internet (*.%s) with other hosts; a run's far side is one or the other", policy.LabDomain)
	case !spec.AllowInternet:
		return nil, fielderr.New(fieldOf(res.Policy.Hosts[0], u), u.Hostname(), "is neither loopback nor a site of this run's local internet (*.%s): loading another server needs --allow-internet on the command line (never from the spec file); nothing was sent", policy.LabDomain)
	}
	if !res.Local {
		// Every address the user wrote is checked now, before anything exists; names are checked
		// as they resolve (the router's forwarder, and the VUs before they dial).
		for _, h := range res.Policy.Hosts {
			if a, err := netip.ParseAddr(h); err == nil {
				if err := res.Policy.CheckAddr(h, a); err != nil {
					return nil, fielderr.New(fieldOf(h, u), h, "refused before any packet was sent: %v", err)
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(t.Resolve)) {
			if err := res.Policy.CheckAddr(name, res.Resolve[strings.ToLower(name)]); err != nil {
				return nil, fielderr.New(fmt.Sprintf("target.resolve[%q]", name), t.Resolve[name], "refused before any packet was sent: %v", err)
			}
		}
	}
checked:
	if t.CA != "" {
		f, err := userpath.Open(t.CA, maxCAFile)
		if err != nil {
			return nil, userpath.Field("target.ca", err)
		}
		pem, err := io.ReadAll(f)
		f.Close()
		if err != nil || !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return nil, fielderr.New("target.ca", t.CA, "must be a PEM file of CA certificates")
		}
	}
	if t.StatusURL != "" {
		if res.Status, err = statusSource(spec, res); err != nil {
			return nil, err
		}
	}
	far := lab.FarHost
	if res.Local {
		far = lab.FarInternet
	}
	lp, err := lab.PrepareLive(far, spec.AccessNetwork, spec.Seed)
	if err != nil {
		return nil, err
	}
	if !res.Local {
		switch r := lp.Profile; {
		case r.IW != 0, r.TCPPlus != 0:
			return nil, fielderr.New("network", spec.AccessNetwork, "iw and tcpplus act on the servers' side; the target's servers are its own")
		case len(r.OriginExtraRTT) > 0:
			return nil, fielderr.New("network", spec.AccessNetwork, "origin_delay needs the lab's origins; a target's addresses have no origin number")
		}
	}
	return &Prepared{Spec: spec, Lab: lp, Target: res}, nil
}

// fieldOf names the field a host came from: target.url for the URL's, target.origins otherwise.
func fieldOf(host string, u *url.URL) string {
	if strings.EqualFold(strings.Trim(u.Hostname(), "[]"), host) {
		return "target.url"
	}
	return "target.origins"
}

// statusSource checks target.status_url and its format, and gives it a client of its own: this
// process (in the engine's namespace) fetches it, resolving through target.resolve and the
// system's resolver, each address through the target's policy without the run's namespaces —
// loopback (a status page or exporter of this machine), with allow_internet the target's
// server; the local internet's sites publish none.
func statusSource(spec *loadgen.Spec, t *Target) (*status.Source, error) {
	ts := spec.Target
	src := &status.Source{URL: ts.StatusURL, Format: ts.StatusFormat, Metrics: ts.StatusMetrics}
	if err := src.Check(); err != nil {
		field, _, _ := strings.Cut(err.Error(), ":")
		return nil, fielderr.New(field, ts.StatusURL, "%s", strings.TrimSpace(strings.TrimPrefix(err.Error(), field+":")))
	}
	u, _ := url.Parse(ts.StatusURL)
	host := strings.ToLower(u.Hostname())
	if policy.IsLabName(host) {
		return nil, fielderr.New("target.status_url", ts.StatusURL, "the local internet's sites publish no status page; give a status page on loopback, or leave status_url out (the report then says the server side was not measured)")
	}
	pol := policy.Target{Policy: policy.Policy{AllowInternet: spec.AllowInternet}, Named: t.Policy.Named}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if err := pol.CheckAddr(host, a); err != nil {
			return nil, fielderr.New("target.status_url", ts.StatusURL, "refused before any packet was sent: %v", err)
		}
	} else if _, named := t.Resolve[host]; !named && host != "localhost" && !spec.AllowInternet {
		return nil, fielderr.New("target.status_url", ts.StatusURL, "%s is not loopback: a status page elsewhere needs --allow-internet on the command line", host)
	}
	var roots *x509.CertPool
	if ts.CA != "" {
		if f, err := userpath.Open(ts.CA, maxCAFile); err == nil {
			pem, _ := io.ReadAll(f)
			f.Close()
			roots = x509.NewCertPool()
			roots.AppendCertsFromPEM(pem)
		}
	}
	dialer := &net.Dialer{Timeout: maxSampleTime}
	resolve := t.Resolve
	tr := &http.Transport{
		Proxy:               nil,
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 1,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			h, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			var addrs []netip.Addr
			switch a, err := netip.ParseAddr(h); {
			case err == nil:
				addrs = []netip.Addr{a}
			case strings.EqualFold(h, "localhost"):
				addrs = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
			case resolve[strings.ToLower(h)].IsValid():
				addrs = []netip.Addr{resolve[strings.ToLower(h)]}
			default:
				ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", h)
				if err != nil {
					return nil, err
				}
				addrs = ips
			}
			for _, a := range addrs {
				if err := pol.CheckAddr(h, a); err != nil {
					return nil, err
				}
			}
			return dialer.DialContext(ctx, network, net.JoinHostPort(addrs[0].Unmap().String(), port))
		},
	}
	src.Client = &http.Client{Transport: tr, Timeout: maxSampleTime,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return src, nil
}

// targetSample reads the target's status page at interval k's end.
func (r *runner) targetSample(ctx context.Context, k int, since time.Duration) Sample {
	s := Sample{Index: k, TS: round3(since.Seconds()), Gauges: map[string]float64{}, Source: "status:" + r.p.Target.Status.Format}
	g, err := r.p.Target.Status.Sample(ctx, min(r.p.Spec.Interval(), maxSampleTime))
	if err != nil {
		msg := err.Error()
		s.Error = &msg
		return s
	}
	s.Gauges = g
	return s
}

// resolveFlag is loadgen's --resolve for the target's names ("" for none).
func (t *Target) resolveFlag() string {
	var parts []string
	for name, a := range t.Resolve {
		parts = append(parts, name+"="+a.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// runTarget is run for an external target: the live lab (the access link, the egress router and
// its far side), the target's resolve addresses admitted through the router, the status page
// checked once, then the generator in the client namespace under the target's policy.
func (r *runner) runTarget(ctx context.Context, prov trial.Provenance, specJSON []byte) (*Result, error) {
	spec, t, lp := r.p.Spec, r.p.Target, r.p.Lab
	status := "not measured (no target.status_url)"
	if t.Status != nil {
		status = t.Status.URL + " (" + t.Status.Format + ")"
	}
	r.log.Header(
		fmt.Sprintf("wirelab-engine %s (%s) loadtest %s", prov.EngineVersion, prov.GitSHA, spec.LoadtestID),
		"command: "+strings.Join(r.o.Command, " "),
		"spec: "+string(specJSON),
		"network (the users' access link): "+lp.Profile.String(),
		fmt.Sprintf("target: %s, hosts %s, allow_internet %v; server side: %s", t.URL, strings.Join(t.Policy.Hosts, ", "), spec.AllowInternet, status),
	)
	if t.Status != nil {
		// Once before anything exists: a status page that cannot be read is bad input.
		if _, err := t.Status.Sample(ctx, maxSampleTime); err != nil {
			return nil, fielderr.New("target.status_url", t.Status.URL, "%s", strings.TrimPrefix(err.Error(), "target.status_url "+t.Status.URL+": "))
		}
	}
	if ctx.Err() != nil {
		return nil, ErrInterrupted
	}
	ev := trial.NewEgressEvents(r.log)
	var err error
	r.lab, err = lab.Start(ctx, lp, lab.Options{Engine: r.o.Engine, Env: r.o.Env, Command: r.o.Command,
		OnEgress: ev.On, Stderr: r.o.Warn, Log: r.log.Printf})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		return nil, err
	}
	prov.Namespaces = r.lab.Namespaces()
	// target.resolve's addresses are never asked of the forwarder: admitted here, having passed
	// the policy at Prepare.
	var admit []netip.Addr
	for _, a := range t.Resolve {
		admit = append(admit, a)
	}
	if err := r.lab.Topo.Admit(admit...); err != nil {
		return nil, fmt.Errorf("admit target.resolve's addresses: %w", err)
	}
	private := filepath.Join(os.TempDir(), "wirelab-loadtest-"+r.lab.Topo.ID)
	if r.lab.Dir != "" {
		private = filepath.Join(r.lab.Dir, "loadtest")
	}
	if err := os.Mkdir(private, 0o700); err != nil {
		return nil, err
	}
	if r.lab.Dir == "" {
		defer os.RemoveAll(private)
	}
	specFile := filepath.Join(private, "spec.json")
	if err := os.WriteFile(specFile, specJSON, 0o600); err != nil {
		return nil, err
	}
	r.log.Printf("egress path %s / %s up (far side: %s); target %s", r.lab.Topo.Name(netns.Client), r.lab.Topo.Name(netns.Server), r.lab.Topo.Uplink().Far, t.URL)
	r.progress(map[string]any{"event": "ready"})

	// loadgen loads the target once first (--preflight) and then prints the run's start, which
	// the sampler's boundaries count from. A cluster generator starts at the run's shared instant
	// instead (its server is the run's own, checked by the client before the start).
	r.startCh = make(chan int64, 1)
	args := []string{r.o.Engine, "loadgen", "--spec", specFile, "--target", spec.Target.URL,
		"--lab", r.lab.Topo.ID, "--dns", labaddr.DNSAddr.String()}
	var startNs int64
	if r.o.AwaitStart != nil {
		if startNs, err = ReadStart(ctx, r.o.AwaitStart, spec.Interval()); err != nil {
			return r.finish(nil, err)
		}
		r.log.Printf("start instant received: %.3f s from now", float64(startNs-monotonicNow())/1e9)
		args = append(args, "--start-ns", strconv.FormatInt(startNs, 10))
		if spec.RunServer.IsValid() {
			args = append(args, "--run-server", spec.RunServer.String())
		}
		r.startCh <- startNs // the status page's boundaries count from the shared start
		if r.o.Part != "" {
			args = append(args, "--part", r.o.Part, "--histograms")
		}
	} else {
		args = append(args, "--preflight")
	}
	switch {
	case spec.Target.CA != "":
		args = append(args, "--ca", spec.Target.CA)
	case t.Local && t.URL.Scheme == "https":
		args = append(args, "--ca", r.lab.CAFile)
	}
	if rf := t.resolveFlag(); rf != "" {
		args = append(args, "--resolve", rf)
	}
	r.log.Printf("loadgen: %s", strings.Join(args[1:], " "))
	res, err := r.generate(ctx, args, startNs)
	if res != nil {
		prov.Finish()
		res.Provenance = prov
		res.Egress = trial.EgressOf(r.lab.Topo, ev)
		res.ServerMeasured = t.Status != nil
	}
	return r.finish(res, err)
}

// sampleTarget samples the target's status page at start + k·interval until the generator ends
// (nothing without a status page: the server side is not measured).
func (r *runner) sampleTarget(ctx context.Context, exited <-chan struct{}, enc *json.Encoder, sampled *[]Sample) {
	if r.p.Target.Status == nil {
		return
	}
	var startNs int64
	select {
	case startNs = <-r.startCh:
	case <-exited:
		return // the generator ended before its start (its preflight failed)
	}
	r.eachInterval(startNs, exited, enc, sampled, func(k int, since time.Duration) Sample {
		return r.targetSample(ctx, k, since)
	})
}
