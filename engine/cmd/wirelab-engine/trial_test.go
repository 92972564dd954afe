package main

// Tests of `wirelab-engine trial` through the emulated path (root), and of its bad-input handling
// (no root). The checks are issue 3's (spdy3 among the protocols since issue 7, whose own checks
// are in trial_mechanisms_test.go): every corpus page over every protocol with exact object
// counts and bytes; connection discipline; one stream at a time under max_concurrent_streams=1;
// the round trips of a root-only page at 200 ms RTT; the bandwidth bound; ToW ≤ PLT + 1 ms for
// every load; one-line errors with nothing left behind; SIGINT and SIGTERM with broken pipes.
//
// Bounds come from the physics of the path, not from measured values: a quantity that the path
// fixes (n round trips, bits at a rate) is a lower bound that nothing can beat, and the upper
// bound is the same quantity plus what the issue allows (3 %), checked on the median of three
// loads so that one load delayed by the other jobs of a shared 2-core machine does not fail it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/contract/contracttest"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/trial"
	"github.com/wirelab/wirelab/engine/why"
)

// trialCmd runs the test binary as `wirelab-engine trial` on spec (JSON) into dir/out.
func trialCmd(t *testing.T, spec string, limit time.Duration) (*exec.Cmd, string) {
	t.Helper()
	return specCmd(t, "trial", spec, limit)
}

// specCmd is the test binary as `wirelab-engine COMMAND --spec F --out D --progress` (trial,
// loadtest), spec (JSON) written to a fresh directory; it returns the command and D.
func specCmd(t *testing.T, command, spec string, limit time.Duration) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	specFile := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(specFile, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], command, "--spec", specFile, "--out", out, "--progress")
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	return cmd, out
}

// runTrialOK runs a trial to its end and returns its directory; it fails the test unless it exits 0.
func runTrialOK(t *testing.T, spec string, limit time.Duration) string {
	t.Helper()
	cmd, out := trialCmd(t, spec, limit)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(filepath.Join(out, "engine.log"))
		t.Fatalf("trial: %v\nstderr: %s\nengine.log:\n%s", err, stderr.Bytes(), log)
	}
	checkProgress(t, stdout.Bytes())
	return out
}

// checkProgress: ready, one load event per load, done — JSON lines.
func checkProgress(t *testing.T, out []byte) {
	t.Helper()
	var events []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var ev struct {
			Event string `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("progress line %q: %v", line, err)
		}
		events = append(events, ev.Event)
	}
	if len(events) < 3 || events[0] != "ready" || events[len(events)-1] != "done" {
		t.Errorf("progress events %v: want ready, load…, done", events)
	}
}

// checkWholePage reports a load (name: how the messages call it) that did not fetch all of p:
// its objects and body bytes.
func checkWholePage(t *testing.T, name string, l trial.Record, p *page.Page) {
	t.Helper()
	if l.Objects != int64(len(p.Objects)) || l.BodyBytes != p.TotalBytes() {
		t.Errorf("%s: %d objects, %d body bytes; the page has %d and %d", name, l.Objects, l.BodyBytes, len(p.Objects), p.TotalBytes())
	}
}

// wantLoads stops the test unless the trial made n loads, none of them failed.
func (td trialDir) wantLoads(t *testing.T, n int) {
	t.Helper()
	if td.result.Errors != 0 || len(td.loads) != n {
		t.Fatalf("%d loads, %d errors", len(td.loads), td.result.Errors)
	}
}

type trialDir struct {
	dir    string
	result trial.Result
	loads  []trial.Record
}

// readTrial reads a complete trial directory and checks it against the contract: trial.json and
// every record valid against the schemas, indexes 0…N-1, HAR files present, ToW ≤ PLT + 1 ms, and
// the decomposition's invariants (checkWhy).
func readTrial(t *testing.T, dir string) trialDir {
	t.Helper()
	schemas := contracttest.Load(t)
	td := trialDir{dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, trial.TrialFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(contracttest.TrialResult, b); err != nil {
		t.Errorf("trial.json: %v", err)
	}
	if err := json.Unmarshal(b, &td.result); err != nil {
		t.Fatal(err)
	}
	lb, err := os.ReadFile(filepath.Join(dir, trial.LoadsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(lb)), "\n") {
		if err := schemas.Validate(contracttest.LoadRecord, []byte(line)); err != nil {
			t.Errorf("loads.jsonl line %d: %v", i+1, err)
		}
		var r trial.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Index != i {
			t.Errorf("line %d has index %d", i+1, r.Index)
		}
		if r.TowMs > r.PltMs+1 {
			t.Errorf("load %d (%s): tow_ms %.3f > plt_ms %.3f + 1", r.Index, r.Protocol, r.TowMs, r.PltMs)
		}
		if r.HAR != nil {
			if _, err := os.Stat(filepath.Join(dir, *r.HAR)); err != nil {
				t.Errorf("load %d: %v", r.Index, err)
			}
		}
		checkWhy(t, &td.result, &r)
		td.loads = append(td.loads, r)
	}
	if td.result.Loads != len(td.loads) {
		t.Errorf("trial.json says %d loads, loads.jsonl has %d", td.result.Loads, len(td.loads))
	}
	return td
}

// checkWhy: a load with a Time on Wire and no error has a decomposition whose parts sum to
// tow_first_packet_ms (within 0.1 ms: each part is rounded to the µs) along its critical path,
// whose segments tile the interval; every TCP retransmission has exactly one kind, and so has every
// h3 packet the engine's loader and the built-in server declared lost (docs/why.md).
func checkWhy(t *testing.T, res *trial.Result, r *trial.Record) {
	t.Helper()
	if r.Error != nil || r.TowMs == 0 {
		return
	}
	if r.Why == nil {
		t.Errorf("load %d (%s): no why", r.Index, r.Protocol)
		return
	}
	if sum := r.Why.Sum(); math.Abs(sum-r.TowFirstPacketMs) > 0.1 {
		t.Errorf("load %d (%s): why sums to %.3f ms, tow_first_packet_ms is %.3f", r.Index, r.Protocol, sum, r.TowFirstPacketMs)
	}
	if n := len(r.WhyPath); n == 0 || math.Abs((r.WhyPath[n-1].To-r.WhyPath[0].From)-r.TowFirstPacketMs) > 0.1 {
		t.Errorf("load %d (%s): the critical path does not span the interval (%d segments)", r.Index, r.Protocol, n)
	}
	for k := 1; k < len(r.WhyPath); k++ {
		if math.Abs(r.WhyPath[k].From-r.WhyPath[k-1].To) > 0.002 {
			t.Errorf("load %d (%s): critical path gap at %.3f ms", r.Index, r.Protocol, r.WhyPath[k-1].To)
			break
		}
	}
	kinds := r.Retx.Total()
	if r.Protocol == "h3" {
		if res.Spec == nil || res.Spec.Server.Impl != "builtin" || res.Spec.Client.Impl != "engine" {
			return
		}
		kinds = r.Retx.Fast + r.Retx.Spurious
	}
	if kinds != r.Retransmissions {
		t.Errorf("load %d (%s): %d retransmissions, %+v by kind", r.Index, r.Protocol, r.Retransmissions, r.Retx)
	}
}

// harConns counts the distinct connections per host of one load's HAR.
func harConns(t *testing.T, path string) map[string]int {
	t.Helper()
	conns := map[string]map[string]bool{}
	for _, e := range harEntries(t, path) {
		u, err := url.Parse(e.Request.URL)
		if err != nil {
			t.Fatal(err)
		}
		if conns[u.Host] == nil {
			conns[u.Host] = map[string]bool{}
		}
		conns[u.Host][e.Connection] = true
	}
	out := map[string]int{}
	for h, c := range conns {
		out[h] = len(c)
	}
	return out
}

var allSix = `["h1","h1s","h2","h2c","h3","spdy3"]`

// Every corpus page loads over every protocol without an error, with exactly the page's objects
// and body bytes; HTTP/1.x uses at most 6 connections per origin, h2/h2c/h3/spdy3 exactly one —
// with shards=3, exactly three.
func TestTrialCorpusAllProtocols(t *testing.T) {
	t.Parallel() // no timing bound: runs beside the package's other such tests (parallel_test.go)
	roottest.RequireTUN(t)
	type tc struct {
		page   string
		shards int
	}
	var cases []tc
	for _, name := range page.CorpusNames() {
		cases = append(cases, tc{name, 1})
	}
	cases = append(cases, tc{"youtube", 3}, tc{"imgur", 7})
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/shards=%d", c.page, c.shards), func(t *testing.T) {
			p, err := page.Load(c.page, 1)
			if err != nil {
				t.Fatal(err)
			}
			dir := runTrialOK(t, fmt.Sprintf(`{"page":%q,"shards":%d,"protocols":%s,"repetitions":1,"network":"rtt=2ms"}`, c.page, c.shards, allSix), 5*time.Minute)
			td := readTrial(t, dir)
			td.wantLoads(t, 6)
			for _, l := range td.loads {
				if l.Error != nil {
					t.Errorf("%s: %s", l.Protocol, *l.Error)
				}
				checkWholePage(t, l.Protocol, l, p)
				perHost := harConns(t, filepath.Join(dir, *l.HAR))
				if len(perHost) != c.shards {
					t.Errorf("%s: requests went to %d hosts, want %d", l.Protocol, len(perHost), c.shards)
				}
				switch l.Protocol {
				case "h1", "h1s":
					for h, n := range perHost {
						if n > 6 {
							t.Errorf("%s: %d connections to %s, more than 6", l.Protocol, n, h)
						}
					}
				default:
					if l.Connections != int64(c.shards) {
						t.Errorf("%s: %d connections, want exactly %d (one per origin)", l.Protocol, l.Connections, c.shards)
					}
					for h, n := range perHost {
						if n != 1 {
							t.Errorf("%s: %d connections to %s, want 1", l.Protocol, n, h)
						}
					}
				}
				if (l.Protocol == "h1s" || l.Protocol == "h2" || l.Protocol == "h3" || l.Protocol == "spdy3") && l.TLSHandshakes != l.Connections {
					t.Errorf("%s: %d TLS handshakes on %d connections", l.Protocol, l.TLSHandshakes, l.Connections)
				}
				if l.BytesDown < p.TotalBytes() {
					t.Errorf("%s: %d bytes down the link for %d body bytes", l.Protocol, l.BytesDown, p.TotalBytes())
				}
			}
		})
	}
}

// With max_concurrent_streams = 1 the server never sees two h2 streams open at once (its frame
// observer, serve --conns), and the loads still complete.
func TestTrialOneStreamAtATime(t *testing.T) {
	roottest.RequireTUN(t)
	dir := runTrialOK(t, `{"page":"youtube","protocols":["h2","h2c"],"repetitions":1,"network":"rtt=4ms","server":{"max_concurrent_streams":1}}`, 3*time.Minute)
	td := readTrial(t, dir)
	if td.result.Errors != 0 {
		t.Fatalf("%d errors", td.result.Errors)
	}
	b, err := os.ReadFile(filepath.Join(dir, trial.ServerConns))
	if err != nil {
		t.Fatal(err)
	}
	streams := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c struct {
			Protocol string `json:"protocol"`
			H2       *struct {
				Streams        int `json:"streams"`
				MaxOpenStreams int `json:"max_open_streams"`
			} `json:"h2"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		if c.H2 == nil {
			t.Fatalf("%s connection without the frame observer's figures: %s", c.Protocol, line)
		}
		streams += c.H2.Streams
		if c.H2.MaxOpenStreams != 1 {
			t.Errorf("%s connection: %d streams open at once, want 1", c.Protocol, c.H2.MaxOpenStreams)
		}
	}
	if streams != 2*50 {
		t.Errorf("%d streams over both loads, want 100 (youtube's 50 objects twice)", streams)
	}
}

// Physics at 200 ms RTT, no rate limit, static names, a 1 kB root document (synthetic:0x1kB):
// PLT = h1 2 RTT (TCP + request), h1s 3 RTT (TCP, TLS 1.3, request), h2 3 RTT, h2c 2 RTT, h3
// 2 RTT (QUIC handshake with TLS 1.3 inside, request), spdy3 3 RTT (as h2). The first packet's ToW (SYN or QUIC Initial
// to the last response packet) is the same count of round trips measured on the emulator's clock.
//
// Bounds, from the path: every load takes at least n RTT − 1 ms (nothing beats the path), and
// fewer than n + 1 RTT at the median (no protocol spends an extra round trip). The 3 % is
// checked on the fastest of five loads: whatever else the machine does can only add time to a load
// (processes woken late, a server answering late), never remove any, so the fastest load is the
// closest to the path's own figure — and a protocol that needed another round trip would miss the
// bound by 30 % or more. Measured on this 2-core machine at load ≈ 1.5: 1–2 ms above n RTT per round
// trip for TCP (~0.2 ms per RTT from the emulator, the rest the endpoints waking up and TLS), h3
// 2.01–2.05 RTT (quic-go's user-space handshake). With other jobs overloading the machine (go test
// of several packages at once, load average 12–23), single loads took 10–500 ms longer — one
// server answered a QUIC Initial 950 ms late, in captures — and medians reached 3.15 RTT.
func TestTrialPhysicsRoundTrips(t *testing.T) {
	roottest.RequireTUN(t)
	const rtt = 200.0
	rtts := map[string]float64{"h1": 2, "h1s": 3, "h2": 3, "h2c": 2, "h3": 2, "spdy3": 3}
	// The decomposition: the connection's handshakes are setup (TCP 1 RTT, TLS 1.3 one more, QUIC
	// 1 RTT); the request's and the response's way are transfer (1 RTT); nothing else is more than
	// the endpoints' processing.
	setup := map[string]float64{"h1": 1, "h1s": 2, "h2": 2, "h2c": 1, "h3": 1, "spdy3": 2}
	// The upper bounds depend on the machine: retried once with a new trial (internal/timebound).
	timebound.Retry(t, func(a *timebound.Attempt) {
		dir := runTrialOK(t, `{"page":"synthetic:0x1kB","protocols":`+allSix+`,"repetitions":5,"network":"rtt=200ms","client":{"dns":"static"}}`, 3*time.Minute)
		td := readTrial(t, dir)
		values := map[string]map[string][]float64{"plt_ms": {}, "tow_first_packet_ms": {}, "setup_ms": {}}
		for _, l := range td.loads {
			if l.Error != nil {
				t.Fatalf("%s: %s", l.Protocol, *l.Error)
			}
			s := l.Why[why.Setup]
			values["setup_ms"][l.Protocol] = append(values["setup_ms"][l.Protocol], s)
			if s < setup[l.Protocol]*rtt-1 {
				t.Errorf("%s load %d: setup_ms %.1f ms < %.0f RTT: faster than the path", l.Protocol, l.Index, s, setup[l.Protocol])
			}
			// Both transfer's lower bound and unattributed's upper one depend on when the endpoints'
			// processes run, for h3 above all (quic-go sends from user space): with six busy loops on
			// this 2-core machine, 5 of 20 h3 loads showed 1–18 ms of unattributed time between the
			// handshake's end and the request's datagram leaving (the request written, quic-go's send
			// loop not yet woken: docs/why.md rule 6). On a quiet machine that does not happen; so
			// they are timing bounds, retried once, not the test's own failures. (A transfer_ms of
			// 100.0 ms in about one h3 load in 100 under load was the loader's record of the
			// response's stream taken before quic-go had written it — fixed, docs/why.md.)
			if tr := l.Why[why.Transfer]; tr < rtt-1 {
				a.Errorf("%s load %d: transfer_ms %.1f ms, less than 1 RTT (the request's and the response's way)", l.Protocol, l.Index, tr)
			} else if tr > rtt*1.03 {
				a.Errorf("%s load %d: transfer_ms %.1f ms, more than 3 %% above 1 RTT (the request's and the response's way)", l.Protocol, l.Index, tr)
			}
			if u := l.Why[why.Unattributed]; u > 1 {
				a.Errorf("%s load %d: unattributed_ms %.3f ms", l.Protocol, l.Index, u)
			}
			n := rtts[l.Protocol]
			for name, v := range map[string]float64{"plt_ms": l.PltMs, "tow_first_packet_ms": l.TowFirstPacketMs} {
				if v < n*rtt-1 {
					t.Errorf("%s load %d: %s %.1f ms < %.0f RTT = %.0f ms: faster than the path", l.Protocol, l.Index, name, v, n, n*rtt)
				}
				values[name][l.Protocol] = append(values[name][l.Protocol], v)
			}
		}
		for _, proto := range trial.AllProtocols {
			vs := values["setup_ms"][proto]
			best := slices.Min(vs)
			t.Logf("%s: setup_ms fastest %.1f ms = %.3f RTT, median %.1f ms", proto, best, best/rtt, median(vs))
			if best > setup[proto]*rtt*1.03 {
				a.Errorf("%s: setup_ms fastest of %d loads %.1f ms, more than 3 %% above %.0f RTT", proto, len(vs), best, setup[proto])
			}
		}
		for _, proto := range trial.AllProtocols {
			n := rtts[proto]
			for _, name := range []string{"plt_ms", "tow_first_packet_ms"} {
				vs := values[name][proto]
				best, m := slices.Min(vs), median(vs)
				t.Logf("%s: %s fastest %.1f ms = %.3f RTT, median %.1f ms (%v)", proto, name, best, best/rtt, m, vs)
				if best > n*rtt*1.03 {
					a.Errorf("%s: %s fastest of %d loads %.1f ms, more than 3 %% above %.0f RTT (%.0f ms)", proto, name, len(vs), best, n, n*rtt)
				}
				if m >= (n+1)*rtt {
					a.Errorf("%s: %s median %.1f ms: a round trip more than the protocol needs (%.0f RTT)", proto, name, m, n)
				}
			}
		}
	})
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// Bandwidth-bound: synthetic:1x2MB at 10 Mbit/s and 20 ms RTT — the body's bits at the rate take
// 1.6 s; ToW (request to last response byte) adds the handshakes (a few RTT), slow start and the
// headers (1500/1448 for TCP, more for QUIC): body bits / rate ÷ ToW ≥ 0.85. Physics caps it at 1
// on every load. As with the round trips, other work on the machine only lowers the ratio (quic-go
// paces and acknowledges in user space: 0.83 measured once while go test ran several packages
// at once, 0.92 otherwise), so the bound is on the best of three loads per protocol.
func TestTrialBandwidthBound(t *testing.T) {
	roottest.RequireTUN(t)
	// The lower bound on the ratio depends on the machine: retried once with a new trial (internal/timebound).
	timebound.Retry(t, func(a *timebound.Attempt) {
		dir := runTrialOK(t, `{"page":"synthetic:1x2MB","protocols":["h1","h2","h3"],"repetitions":3,"network":"rtt=20ms,bw=10mbit","client":{"dns":"static"}}`, 3*time.Minute)
		td := readTrial(t, dir)
		best := map[string]float64{}
		for _, l := range td.loads {
			if l.Error != nil {
				t.Fatalf("%s: %s", l.Protocol, *l.Error)
			}
			ideal := float64(l.BodyBytes) * 8 / 10e6 * 1000 // ms
			ratio := ideal / l.TowMs
			t.Logf("%s: %d body bytes, ToW %.1f ms, ideal %.1f ms: %.3f; wire bytes ÷ rate ÷ ToW %.3f", l.Protocol, l.BodyBytes, l.TowMs, ideal, ratio, float64(l.BytesDown)*8/10e6*1000/l.TowMs)
			if ratio > 1 {
				t.Errorf("%s load %d: %.3f > 1: the body crossed faster than the link's rate", l.Protocol, l.Index, ratio)
			}
			best[l.Protocol] = max(best[l.Protocol], ratio)
		}
		for _, proto := range []string{"h1", "h2", "h3"} {
			if best[proto] < 0.85 {
				a.Errorf("%s: body bits / rate ÷ ToW = %.3f at best of 3 loads < 0.85", proto, best[proto])
			}
		}
	})
}

// capture.pcap: one pair of captures per load, holding the load's packets.
func TestTrialPcapPerLoad(t *testing.T) {
	roottest.RequireTUN(t)
	dir := runTrialOK(t, `{"page":"twitter","protocols":["h2","h3"],"repetitions":1,"network":"rtt=10ms","capture":{"pcap":true,"har":false}}`, 2*time.Minute)
	td := readTrial(t, dir)
	for _, l := range td.loads {
		if l.Pcap == nil || l.HAR != nil {
			t.Fatalf("load %d: pcap %v har %v", l.Index, l.Pcap, l.HAR)
		}
		for side, path := range map[string]string{"client": l.Pcap.Client, "server": l.Pcap.Server} {
			n := pcapPackets(t, filepath.Join(dir, path))
			// Each side's file holds the packets of both directions that crossed it: at least the
			// load's own (teardown stragglers of an earlier load may add a few).
			if own := l.PacketsUp + l.PacketsDown; int64(n) < own || int64(n) > own+20 {
				t.Errorf("load %d %s pcap: %d packets, the load has %d", l.Index, side, n, own)
			}
		}
	}
}

// pcapPackets counts the records of a pcap file.
func pcapPackets(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 24 || binary.LittleEndian.Uint32(b) != 0xa1b23c4d {
		t.Fatalf("%s: not a nanosecond pcap", path)
	}
	n := 0
	for off := 24; off+16 <= len(b); n++ {
		off += 16 + int(binary.LittleEndian.Uint32(b[off+8:]))
	}
	return n
}

// Bad input: one line naming the field, exit 2, nothing created (no directory, no namespace).
func TestTrialBadInput(t *testing.T) {
	dir := t.TempDir()
	cyclic := filepath.Join(dir, "cyclic.json")
	if err := os.WriteFile(cyclic, []byte(`{"name":"c","seed":1,"origins":[{"host":"s1.wirelab.test"}],"objects":[
	  {"id":"root","path":"/index.html","origin":0,"size":2000,"type":"html","content_type":"text/html"},
	  {"id":"a","path":"/a.js","origin":0,"size":500,"type":"js","content_type":"application/javascript"}],
	  "activities":[{"id":"d0","kind":"download","object":"root","deps":[{"on":"e1"}]},
	    {"id":"d1","kind":"download","object":"a","deps":[{"on":"d0"}]},
	    {"id":"e1","kind":"evaluate","object":"a","duration_ms":1,"deps":[{"on":"d1"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	schemaFail := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(schemaFail, []byte(`{"name":"b","seed":1,"origins":[{"host":"s1.wirelab.test"}],"objects":[
	  {"id":"root","path":"/index.html","origin":0,"size":-5,"type":"html","content_type":"text/html"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	checkRefusedSpecs(t, []refusedSpec{
		{`{"page":"twiter"}`, `page: got "twiter"; must be a corpus page`},
		{`{"page":"twitter","protocols":["h2","h4"]}`, `protocols[1]: got "h4"; did you mean h1? must be h1, h1s, h2, h2c, h3 or spdy3`},
		{`{"page":"twitter","shards":9}`, `shards: got 9; the page has 6 objects besides the root, so at most 6 shards`},
		{`{"page":"twitter","shards":0}`, `shards: got 0; 0 (one origin per top-level-domain group or per domain) needs shard_mode tld or domain`},
		{`{"page":"` + schemaFail + `"}`, `page (` + schemaFail + `): objects[0].size: got -5`},
		{`{"page":"` + cyclic + `"}`, `dependency cycle`},
		{`{"page":"twitter","server":{"max_concurent_streams":1}}`, `server.max_concurent_streams: unknown field; did you mean max_concurrent_streams?`},
		{`{"page":"twitter","client":{"impl":"chromium"},"protocols":["h2","h2c"]}`, `protocols[1]: got "h2c"; not loadable by client.impl chromium`},
		{`{"page":"twitter","client":{"impl":"chromium","mode":"replay"},"protocols":["h2"]}`, `client.mode: got "replay"; Chromium loads a page as a browser does`},
		{`{"page":"twitter","network":"rtt=fast"}`, `network: rtt: "fast"`},
	})

	// An output directory that already holds a trial is refused too.
	cmd, out := trialCmd(t, `{"page":"twitter"}`, time.Minute)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "loads.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if code := exitCodeOf(cmd.Run()); code != 2 || !strings.Contains(stderr.String(), "already holds loads.jsonl") {
		t.Errorf("existing trial output: exit %d, %q", code, stderr.String())
	}
}

var nsRE = regexp.MustCompile(`(?m)^(wirelab-[0-9a-f]{8}-[cs])\b`)

func wirelabNamespaces(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil
	}
	var names []string
	for _, m := range nsRE.FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	sort.Strings(names)
	return names
}

// leftNamespaces is the namespaces of wirelabNamespaces that are not in before and belong to one of
// the processes pids (the test's own commands): their run's state file names that owner — or names
// none while the namespace is still there (an object without its state file, the leak the bad-input
// checks look for). Other runs on the machine (other tests' or users' at the same time, in /run/netns
// which no test isolation hides) come and go between two listings: theirs are not this test's.
func leftNamespaces(t *testing.T, before []string, pids []int) []string {
	t.Helper()
	var left []string
	for _, ns := range wirelabNamespaces(t) {
		if slices.Contains(before, ns) {
			continue
		}
		id := strings.TrimPrefix(ns, netns.Prefix)[:8]
		b, err := os.ReadFile(filepath.Join(netns.StateDir, id+".json"))
		if err == nil {
			var st struct {
				PID int `json:"pid"`
			}
			if json.Unmarshal(b, &st) == nil && !slices.Contains(pids, st.PID) {
				continue // another process's run
			}
		} else if _, err := os.Stat(filepath.Join("/run/netns", ns)); err != nil {
			continue // gone meanwhile: its run ended (the state file goes last)
		}
		left = append(left, ns)
	}
	return left
}

var trialTopoRE = regexp.MustCompile(`topology wirelab-([0-9a-f]{8})-c / wirelab-[0-9a-f]{8}-s up`)

// SIGINT or SIGTERM mid-trial: exit 130, no trial.json, everything removed — also when stdout and
// stderr are broken pipes (the control plane died), which must not kill the engine mid-cleanup.
func TestTrialInterrupted(t *testing.T) {
	roottest.RequireTUN(t)
	for _, tc := range []struct {
		name        string
		sig         syscall.Signal
		brokenPipes bool
	}{
		{"SIGINT", syscall.SIGINT, false},
		{"SIGTERM with broken pipes", syscall.SIGTERM, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, out := trialCmd(t, `{"page":"twitter","protocols":["h1s","h2"],"repetitions":50,"network":"rtt=100ms"}`, 2*time.Minute)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			stderrR, stderrW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = stderrW
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stderrW.Close()
			// Wait for the first load's progress line: mid-trial.
			r := bufio.NewReader(stdout)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					cmd.Wait()
					t.Fatalf("no load event before %v", err)
				}
				if strings.Contains(line, `"event":"load"`) {
					break
				}
			}
			var stderrText []byte
			if tc.brokenPipes {
				stdout.Close()
				stderrR.Close()
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if !tc.brokenPipes {
				stderrText, _ = io.ReadAll(stderrR)
				_, _ = io.ReadAll(r)
			}
			err = cmd.Wait()
			if code := exitCodeOf(err); code != 130 {
				t.Errorf("exit %d (%v), want 130; stderr %s", code, err, stderrText)
			}
			if !tc.brokenPipes && !strings.Contains(string(stderrText), "interrupted") {
				t.Errorf("stderr %q", stderrText)
			}
			if _, err := os.Stat(filepath.Join(out, trial.TrialFile)); !errors.Is(err, os.ErrNotExist) {
				t.Error("trial.json written by an interrupted trial")
			}
			log, _ := os.ReadFile(filepath.Join(out, trial.LogFile))
			m := trialTopoRE.FindSubmatch(log)
			if m == nil {
				t.Fatalf("no topology line in engine.log:\n%s", log)
			}
			assertGone(t, string(m[1]))
		})
	}
}

// startUntilLoad starts cmd (a trial or a load test with --progress) and reads its progress lines
// until the first load's; it returns the reader of the rest. cmd.Stderr, when a *bytes.Buffer, is
// quoted if no load comes.
func startUntilLoad(t *testing.T, cmd *exec.Cmd) *bufio.Reader {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			cmd.Wait()
			var stderr string
			if b, ok := cmd.Stderr.(*bytes.Buffer); ok {
				stderr = b.String()
			}
			t.Fatalf("no load event (%v): %s", err, stderr)
		}
		if strings.Contains(line, `"event":"load"`) {
			return r
		}
	}
}

// SIGKILL leaves the namespaces, the state file, the lab's private directory (its certificates)
// and the server's control group; `wirelab-engine gc` removes all of them.
func TestTrialKilledThenGC(t *testing.T) {
	roottest.RequireTUN(t)
	cmd, out := trialCmd(t, `{"page":"twitter","protocols":["h1s","h2"],"repetitions":50,"network":"rtt=100ms"}`, 2*time.Minute)
	startUntilLoad(t, cmd)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	log, _ := os.ReadFile(filepath.Join(out, trial.LogFile))
	m := trialTopoRE.FindSubmatch(log)
	if m == nil {
		t.Fatalf("no topology line in engine.log:\n%s", log)
	}
	id := string(m[1])
	private := filepath.Join(os.TempDir(), "wirelab-lab-"+id)
	if _, err := os.Stat(filepath.Join(private, "certs", "key.pem")); err != nil {
		t.Fatalf("the killed trial's private directory: %v", err)
	}
	var st struct {
		Cgroups []string `json:"cgroups"`
	}
	if b, err := os.ReadFile(filepath.Join(netns.StateDir, id+".json")); err == nil {
		_ = json.Unmarshal(b, &st)
	}
	for _, cg := range st.Cgroups {
		if _, err := os.Stat(cg); err != nil {
			t.Errorf("the server's control group %s: %v", cg, err)
		}
	}
	gc := engine("gc")
	gcOut, err := gc.CombinedOutput()
	if err != nil {
		t.Fatalf("gc: %v\n%s", err, gcOut)
	}
	if !strings.Contains(string(gcOut), "removed "+private) {
		t.Errorf("gc did not report %s:\n%s", private, gcOut)
	}
	if _, err := os.Stat(private); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left after gc", private)
	}
	for _, cg := range st.Cgroups {
		if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("control group %s left after gc", cg)
		}
	}
	assertGone(t, id)
}

// Replay (client.mode = replay) follows the page's dependency graph: every object exactly once, on
// a sharded page from each object's own origin. Its computations are waits: at compute_scale 10 a
// load lasts at least 10 × the graph's longest chain of computations (nothing can run a chain's
// steps in parallel), and longer than the same replay without computations (compute_scale 0).
func TestTrialReplay(t *testing.T) {
	roottest.RequireTUN(t)
	p, err := page.Load("nytimes", 1)
	if err != nil {
		t.Fatal(err)
	}
	chain := computeChainMs(p)
	if chain <= 0 {
		t.Fatal("nytimes has no recorded computations")
	}
	load := func(scale float64) trialDir {
		dir := runTrialOK(t, fmt.Sprintf(`{"page":"nytimes","shards":3,"protocols":["h2","h1s"],"repetitions":1,"network":"rtt=20ms","client":{"mode":"replay","compute_scale":%g}}`, scale), 3*time.Minute)
		return readTrial(t, dir)
	}
	const scale = 10
	replay := load(scale)
	for _, l := range replay.loads {
		if l.Error != nil {
			t.Fatalf("%s: %s", l.Protocol, *l.Error)
		}
		checkWholePage(t, "replay "+l.Protocol, l, p)
		if l.Client["mode"] != "replay" || l.Client["compute_scale"] != float64(scale) {
			t.Errorf("replay %s: client extras %v", l.Protocol, l.Client)
		}
		if perHost := harConns(t, filepath.Join(replay.dir, *l.HAR)); len(perHost) != 3 {
			t.Errorf("replay %s: requests went to %d hosts, want 3", l.Protocol, len(perHost))
		}
		if l.PltMs < scale*chain {
			t.Errorf("replay %s: PLT %.1f ms, shorter than %d × the longest computation chain (%.1f ms)", l.Protocol, l.PltMs, scale, chain)
		}
	}
	noCompute := load(0)
	for i, l := range noCompute.loads {
		if l.Error != nil {
			t.Fatalf("compute_scale 0 %s: %s", l.Protocol, *l.Error)
		}
		if with := replay.loads[i].PltMs; with <= l.PltMs {
			t.Errorf("%s: replay PLT %.1f ms at compute_scale %d, %.1f ms without computations", l.Protocol, with, scale, l.PltMs)
		}
	}
}

// computeChainMs is the largest sum of computation durations along a dependency chain of p's graph.
func computeChainMs(p *page.Page) float64 {
	byID := map[string]page.Activity{}
	for _, a := range p.Activities {
		byID[a.ID] = a
	}
	memo := map[string]float64{}
	var chain func(id string) float64
	chain = func(id string) float64 {
		if v, ok := memo[id]; ok {
			return v
		}
		a := byID[id]
		longest := 0.0
		for _, d := range a.Deps {
			longest = max(longest, chain(d.On))
		}
		memo[id] = a.DurationMs + longest
		return memo[id]
	}
	best := 0.0
	for _, a := range p.Activities {
		best = max(best, chain(a.ID))
	}
	return best
}

// client.impl = chromium loads each page in Chromium (browse) through the emulated path: every
// object, one connection per origin for h2 and h3, Chromium's extras in the record, ToW ≤ PLT.
func TestTrialChromium(t *testing.T) {
	t.Parallel() // no timing bound: runs beside the package's other such tests (parallel_test.go)
	roottest.RequireTUN(t)
	requireChromium(t)
	p, err := page.Load("imgur", 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := runTrialOK(t, `{"page":"imgur","shards":2,"protocols":["h1s","h2","h3"],"repetitions":1,"network":"rtt=10ms","client":{"impl":"chromium"}}`, 4*time.Minute)
	td := readTrial(t, dir)
	for _, l := range td.loads {
		if l.Error != nil {
			t.Fatalf("%s: %s", l.Protocol, *l.Error)
		}
		checkWholePage(t, l.Protocol, l, p)
		if l.Client["impl"] != "chromium" || l.Client["version"] == nil || l.Client["loader_cpu_ms"] == nil {
			t.Errorf("%s: client extras %v", l.Protocol, l.Client)
		}
		if l.Protocol != "h1s" && l.Connections != 2 {
			t.Errorf("%s: %d connections, want one per origin (2)", l.Protocol, l.Connections)
		}
		if l.TowMs <= 0 || l.BytesDown < p.TotalBytes() {
			t.Errorf("%s: tow %.1f ms, %d bytes down for %d body bytes", l.Protocol, l.TowMs, l.BytesDown, p.TotalBytes())
		}
	}
}

// refusedSpec is a trial spec the engine must refuse, with what its one line must say.
type refusedSpec struct{ spec, want string }

// checkRefusedSpecs runs a trial of each spec: exit 2, one line on stderr holding want, nothing on
// stdout, no trial directory, and no namespace of these commands' runs left behind.
func checkRefusedSpecs(t *testing.T, cases []refusedSpec) {
	t.Helper()
	before := wirelabNamespaces(t)
	var pids []int
	for _, tc := range cases {
		cmd, out := trialCmd(t, tc.spec, time.Minute)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if cmd.Process != nil {
			pids = append(pids, cmd.Process.Pid)
		}
		if code := exitCodeOf(err); code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", tc.spec, code, stderr.String())
		}
		msg := strings.TrimSuffix(stderr.String(), "\n")
		if strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: stderr %q, want one line with %q", tc.spec, stderr.String(), tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%s: stdout %q", tc.spec, stdout.String())
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the trial directory was created", tc.spec)
		}
	}
	if left := leftNamespaces(t, before, pids); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}
