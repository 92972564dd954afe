package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/contract/contracttest"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/pktlog"
	"github.com/wirelab/wirelab/engine/trial"
)

// A live trial against the local internet (docs/live.md): the loads alternate the protocols with
// the gap between them, each forced to its protocol (UDP to 443 only for h3), each discovers the
// site's objects and writes its HAR; and Time on Wire computed again from each load's written
// client capture — through pktlog.FromPcap, trial.Own and pktlog.SummarizeUntil, the code the
// trial ran on its in-memory packet log — is the record's within 1 ms. Nothing is left.
func TestLiveTrialLocalInternet(t *testing.T) {
	roottest.RequireTUN(t)
	for _, impl := range []string{"engine", "chromium"} {
		t.Run(impl, func(t *testing.T) {
			if impl == "chromium" {
				requireChromium(t)
			}
			liveTrial(t, impl)
		})
	}
}

func liveTrial(t *testing.T, impl string) {
	const gapMs = 300
	protocols := []string{"h1s", "h2", "h3"}
	dir := t.TempDir()
	spec := writeSpec(t, `{"page":"url:https://h3.wirelab.test/L/fixture/","protocols":["h1s","h2","h3"],"repetitions":2,
		"gap_ms":300,"network":"rtt=20ms","capture":{"har":true,"pcap":true},"client":{"impl":"`+impl+`"}}`)
	out := filepath.Join(dir, "out")
	cmd := engine("trial", "--spec", spec, "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(filepath.Join(out, trial.LogFile))
		t.Fatalf("trial: %v\n%s\n%s", err, stderr.String(), log)
	}
	schemas := contracttest.Load(t)
	b, err := os.ReadFile(filepath.Join(out, trial.LoadsFile))
	if err != nil {
		t.Fatal(err)
	}
	var prevStart time.Time
	var prevPlt, maxDiff float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for ; sc.Scan(); n++ {
		if err := schemas.Validate(contracttest.LoadRecord, sc.Bytes()); err != nil {
			t.Errorf("record %d breaks the schema: %v", n, err)
		}
		var rec trial.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Error != nil {
			t.Errorf("load %d: %s", n, *rec.Error)
			continue
		}
		if want := protocols[n%len(protocols)]; rec.Protocol != want || rec.Repetition != n/len(protocols) {
			t.Errorf("load %d is %s rep %d; want %s rep %d (alternating)", n, rec.Protocol, rec.Repetition, want, n/len(protocols))
		}
		started, err := time.Parse(time.RFC3339Nano, rec.StartedAt)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			if idle := started.Sub(prevStart).Seconds()*1000 - prevPlt; idle < gapMs {
				t.Errorf("load %d started %.1f ms after load %d ended; gap_ms is %d", n, idle, n-1, gapMs)
			}
		}
		prevStart, prevPlt = started, rec.PltMs
		// The root and the eight objects it references on the site (sites.PageName), discovered.
		if rec.Objects != 9 {
			t.Errorf("load %d: %d objects, want 9", n, rec.Objects)
		}
		if rec.HAR == nil {
			t.Errorf("load %d: no HAR", n)
		} else if h, err := os.ReadFile(filepath.Join(out, *rec.HAR)); err != nil || strings.Count(string(h), `"request"`) != 9 {
			t.Errorf("load %d: HAR %s: %v, %d requests", n, *rec.HAR, err, strings.Count(string(h), `"request"`))
		}
		if rec.Pcap == nil || rec.Pcap.LoadEndNs == 0 {
			t.Fatalf("load %d: no capture or no load_end_ns: %+v", n, rec.Pcap)
		}
		f, err := os.Open(filepath.Join(out, rec.Pcap.Client))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := pktlog.FromPcap(f, labaddr.ClientAddr)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		own, _ := trial.Own(recs)
		sum := pktlog.SummarizeUntil(own, time.Duration(rec.Pcap.LoadEndNs))
		tow, ok := sum.ToW()
		if !ok {
			t.Errorf("load %d: no ToW from the capture", n)
		} else if d := math.Abs(float64(tow)/1e6 - rec.TowMs); d > 1 {
			t.Errorf("load %d %s: ToW from the capture %.3f ms, from the packet log %.3f ms (%.3f ms apart)", n, rec.Protocol, float64(tow)/1e6, rec.TowMs, d)
		} else {
			maxDiff = max(maxDiff, d)
		}
		quic := false
		for i := range own {
			quic = quic || (own[i].Proto == pktlog.ProtoUDP && own[i].DstPort == 443)
		}
		if quic != (rec.Protocol == "h3") {
			t.Errorf("load %d %s: UDP to port 443 %v", n, rec.Protocol, quic)
		}
	}
	if n != 6 {
		t.Errorf("%d records, want 6", n)
	}
	// Through the egress router (docs/egress.md): the site's address alone was admitted, by the
	// DNS forwarder's answer to the planning query, and nothing the loads sent was refused.
	var res trial.Result
	if b, err := os.ReadFile(filepath.Join(out, trial.TrialFile)); err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("trial.json: %v", err)
	}
	if e := res.Egress; e == nil || e.Far != "internet" || len(e.Admitted) != 1 || e.Admitted[0] != "10.77.1.3" || e.RefusedPackets != 0 || e.RefusedByPolicy != 0 {
		t.Errorf("egress %+v: want far internet, [10.77.1.3] admitted, nothing refused", res.Egress)
	}
	t.Logf("%s: ToW from the captures vs the records: at most %.6f ms apart (the record rounds to µs)", impl, maxDiff)
	assertTrialGone(t, out)
}

// A live page whose name resolves to a documentation address is refused with one line and exit 2
// after planning, and the run's packet log shows that only the run's DNS server was sent anything;
// a public name is refused before anything exists. Nothing is left either way. The engine runs
// where no route leads off the machine (offMachine).
func TestLiveTrialRefusals(t *testing.T) {
	roottest.RequireTUN(t)
	run := offMachine(t)
	for _, c := range []struct {
		page, words string
		planned     bool
	}{
		{"url:https://doc.wirelab.test/", "resolves to 192.0.2.1", true},
		{"url:https://example.org/", "--allow-internet", false},
	} {
		out := filepath.Join(t.TempDir(), "out")
		spec := writeSpec(t, `{"page":"`+c.page+`","protocols":["h2"],"repetitions":1}`)
		cmd := run("trial", "--spec", spec, "--out", out)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		msg := strings.TrimSpace(stderr.String())
		if code := exitCodeOf(err); code != 2 || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, c.words) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line with %q", c.page, code, msg, c.words)
		}
		if _, err := os.Stat(filepath.Join(out, trial.TrialFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: trial.json written", c.page)
		}
		log, _ := os.ReadFile(filepath.Join(out, trial.LogFile))
		if !c.planned {
			if len(log) > 0 {
				t.Errorf("%s: refused after the run began:\n%s", c.page, log)
			}
			continue
		}
		var planning string
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, "planning: ") {
				planning = line
			}
		}
		if !strings.Contains(planning, "to 10.77.2.53:53/udp") || strings.Contains(planning, "192.0.2.1") ||
			strings.Count(planning, " to ") != 1 {
			t.Errorf("%s: what crossed the link while planning: %q; want DNS queries to the run's server only", c.page, planning)
		}
		assertTrialGone(t, out)
	}
}

// assertTrialGone checks that nothing of the run named in engine.log is left.
func assertTrialGone(t *testing.T, out string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(out, trial.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(log), "wirelab-")
	for i >= 0 {
		if id := namespacePattern(strings.Fields(string(log)[i:])[0]); id != "" {
			assertGone(t, id)
			return
		}
		j := strings.Index(string(log)[i+1:], "wirelab-")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	t.Errorf("engine.log names no client namespace")
}

// Chromium cannot be held to h2 as the engine's loader is: against a site that serves HTTP/1.1
// only, its "h2" load is spoken over HTTP/1.1 — which the trial records as the load's error, not
// as an h2 load.
func TestLiveChromiumFallbackIsAnError(t *testing.T) {
	roottest.RequireTUN(t)
	requireChromium(t)
	out := filepath.Join(t.TempDir(), "out")
	spec := writeSpec(t, `{"page":"url:https://h1.wirelab.test/L/fixture/","protocols":["h2"],"repetitions":1,"client":{"impl":"chromium"}}`)
	cmd := engine("trial", "--spec", spec, "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("trial: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, trial.LoadsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec trial.Record
	if err := json.Unmarshal(bytes.TrimSpace(b), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Error == nil || !strings.Contains(*rec.Error, "answered over http/1.1, not h2") {
		t.Errorf("the h2 load of an HTTP/1.1-only site by Chromium: error %v", rec.Error)
	}
	assertTrialGone(t, out)
}

// A live trial killed with SIGKILL mid-run leaves its three namespaces and its state file (the
// sites' server and the router's DNS forwarder die with it: Pdeathsig, and the forwarder's standard
// input closes); `wirelab-engine gc` removes them, and no forwarder of the run is left.
func TestLiveTrialKilledThenGC(t *testing.T) {
	roottest.RequireTUN(t)
	cmd, out := trialCmd(t, `{"page":"url:https://h3.wirelab.test/L/fixture/","protocols":["h1s","h2"],"repetitions":50,"gap_ms":200,"network":"rtt=20ms"}`, 2*time.Minute)
	startUntilLoad(t, cmd)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	log, _ := os.ReadFile(filepath.Join(out, trial.LogFile))
	m := regexp.MustCompile(`wirelab-([0-9a-f]{8})-i`).FindSubmatch(log)
	if m == nil {
		t.Fatalf("no internet namespace in engine.log:\n%s", log)
	}
	id := string(m[1])
	forwarders := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && strings.Contains(string(b), "--forward") && strings.Contains(string(b), "wirelab-"+id+"-s") {
				n, _ := strconv.Atoi(e.Name())
				pids = append(pids, n)
			}
		}
		return pids
	}
	if _, err := os.Stat("/run/netns/wirelab-" + id + "-i"); err != nil {
		t.Fatalf("the killed run's internet namespace is not there to be collected: %v", err)
	}
	if gcOut, err := engine("gc").CombinedOutput(); err != nil {
		t.Fatalf("gc: %v\n%s", err, gcOut)
	}
	assertGone(t, id)
	if pids := forwarders(); len(pids) != 0 {
		t.Errorf("the forwarder survived gc: %v", pids)
	}
}
