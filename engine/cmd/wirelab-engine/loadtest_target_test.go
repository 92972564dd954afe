package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/loadtest"
	"github.com/wirelab/wirelab/engine/server"
)

// External targets (docs/loadtest.md, "External targets"). Every target here is in the run's own
// local internet or refused before a packet is sent; the refusals run where no route leaves the
// machine (offMachine).

// statusPage serves a Prometheus text page on loopback counting its own requests, or garbage.
func statusPage(t *testing.T, garbage bool) string {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if garbage {
			fmt.Fprintln(w, "<html>this is no status page</html>")
			return
		}
		fmt.Fprintf(w, "# TYPE scrapes_total counter\nscrapes_total %d\n# TYPE in_flight gauge\nin_flight{a=\"1\"} 2\nin_flight{a=\"2\"} 3\n", n.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

const targetSpec = `{"protocol":%q,"network":"rtt=20ms,bw=50mbit","interval_s":1,
 "target":{"url":%q%s},
 "scenario":{"start":1,"stages":[{"duration_s":3,"target":4}]},"think":{"mean_s":0.3},"thresholds":["errors == 0"]}`

// A target in the run's local internet (its h2 site, a server the run starts itself) with a
// status page on loopback: the VUs load it through the access link and the egress router; the
// intervals and the status samples are stored as a lab run's, one sample per interval.
func TestLoadtestTargetLocalInternet(t *testing.T) {
	roottest.RequireTUN(t)
	status := statusPage(t, false)
	extra := fmt.Sprintf(`,"status_url":%q,"status_format":"prometheus","status_metrics":{"scrapes_total":"scrapes","in_flight":""}`, status)
	cmd, out := loadtestCmd(t, fmt.Sprintf(targetSpec, "h2", "https://h2.wirelab.test/L/fixture/", extra), 2*time.Minute)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(filepath.Join(out, loadtest.LogFile))
		t.Fatalf("%v: %s\n%s", err, stderr.String(), log)
	}
	o := readLoadtest(t, out)
	tot := o.Result.Summary.Totals
	if tot.Pages < 4 || tot.PagesFailed != 0 || !o.Result.ThresholdsPassed {
		t.Errorf("pages %d, failed %d, thresholds passed %v: want ≥ 4 pages, none failed", tot.Pages, tot.PagesFailed, o.Result.ThresholdsPassed)
	}
	if len(o.Intervals) < 3 || len(o.Server) != len(o.Intervals) || o.Result.ServerSamples != len(o.Server) {
		t.Fatalf("%d intervals, %d samples (loadtest.json %d): want one sample per interval", len(o.Intervals), len(o.Server), o.Result.ServerSamples)
	}
	for i, s := range o.Server {
		// the page was read once before the run (the check), then once per interval
		if s.Index != i || s.Error != nil || s.Source != "status:prometheus" || s.Gauges["scrapes"] != float64(i+2) || s.Gauges["in_flight"] != 5 {
			t.Errorf("sample %d: %+v; want index %d, scrapes %d, in_flight 5 (summed over labels)", i, s, i, i+2)
		}
		if d := s.TS - o.Intervals[i].TEnd; d < -0.05 || d > 0.5 {
			t.Errorf("sample %d at %.3f s, its interval ends at %.3f s", i, s.TS, o.Intervals[i].TEnd)
		}
	}
	var res struct {
		ServerMeasured bool `json:"server_measured"`
		Egress         *struct {
			Far            string   `json:"far"`
			Admitted       []string `json:"admitted"`
			RefusedPackets int64    `json:"refused_packets"`
		} `json:"egress"`
	}
	b, _ := os.ReadFile(filepath.Join(out, loadtest.ResultFile))
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if !res.ServerMeasured || res.Egress == nil || res.Egress.Far != "internet" || len(res.Egress.Admitted) != 1 || res.Egress.RefusedPackets != 0 {
		t.Errorf("server_measured %v, egress %+v: want measured, the local internet's one site admitted, nothing refused", res.ServerMeasured, res.Egress)
	}
	if o.Result.Emulator.Down.Packets == 0 {
		t.Error("no packet crossed the emulated access link")
	}
}

// Bad input about a target: one line naming the field and the cause, exit 2, nothing stored as
// complete (no loadtest.json). The addresses outside the run are refused before anything exists;
// the targets that cannot be loaded are the local internet's (a port with nothing behind it, a
// certificate from a CA the spec does not give).
func TestLoadtestTargetBadInput(t *testing.T) {
	run := offMachine(t)
	otherCA := filepath.Join(t.TempDir(), "ca")
	if _, err := server.NewCerts(otherCA, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, protocol, url, extra string
		flag                       bool
		want                       string
		lab                        bool // needs a run (and root): refused once the target is tried
	}{
		{"public address without the flag", "h2", "https://93.184.215.14/", "", false, "target.url: got \"93.184.215.14\"; is neither loopback nor a site of this run's local internet", false},
		{"public name without the flag", "h2", "https://staging.example.com/", "", false, "needs --allow-internet on the command line", false},
		{"private address without the flag", "h2", "https://s.example/", `,"resolve":{"s.example":"10.20.0.5"}`, false, "needs --allow-internet", false},
		{"metadata address with the flag", "h1", "http://169.254.169.254/latest/", "", true, "169.254.169.254: a special-purpose address (link-local), refused even with --allow-internet", false},
		{"multicast origin with the flag", "h2", "https://s.example/", `,"resolve":{"s.example":"10.20.0.5"},"origins":["224.0.0.1"]`, true, "target.origins: got \"224.0.0.1\"", false},
		{"resolve to documentation with the flag", "h2", "https://s.example/", `,"resolve":{"s.example":"192.0.2.7"}`, true, "documentation (TEST-NET-1)", false},
		{"loopback", "h1", "http://127.0.0.1/", "", false, "loopback is not reachable through the emulated access link", false},
		{"unknown local site", "h2", "https://nosuch.wirelab.test/", "", false, "is not a site of the local internet", false},
		{"status page of the local internet", "h2", "https://h2.wirelab.test/L/fixture/", `,"status_url":"http://h2.wirelab.test/server-status?auto"`, false, "target.status_url", false},
		{"garbage status page", "h2", "https://h2.wirelab.test/L/fixture/", `,"status_url":"` + statusPage(t, true) + `","status_format":"nginx"`, false, "target.status_url: got", true},
		{"unreachable target", "h3", "https://h3-unserved.wirelab.test/L/fixture/", "", false, "target.url: got \"https://h3-unserved.wirelab.test/L/fixture/\"; --target https://h3-unserved.wirelab.test/L/fixture/: cannot be loaded", true},
		{"failing certificate", "h2", "https://h2.wirelab.test/L/fixture/", `,"ca":"` + filepath.Join(otherCA, "ca.pem") + `"`, false, "certificate signed by unknown authority", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.lab {
				roottest.RequireTUN(t)
			}
			dir := t.TempDir()
			spec := filepath.Join(dir, "spec.json")
			text := fmt.Sprintf(targetSpec, c.protocol, c.url, c.extra)
			if c.name == "unreachable target" { // nothing answers on UDP 443: the preflight waits out the page's timeout
				text = strings.Replace(text, `"interval_s":1`, `"interval_s":1,"client":{"timeout_s":3}`, 1)
			}
			if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			args := []string{"loadtest", "--spec", spec, "--out", out}
			if c.flag {
				args = append(args, "--allow-internet")
			}
			cmd := run(args...)
			if c.lab {
				cmd = engine(args...) // the run's own namespaces; its far side is the local internet
			}
			b, err := cmd.CombinedOutput()
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if code := exitCodeOf(err); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Errorf("exit %d, output %q: want exit 2 and one line with %q", code, b, c.want)
			}
			if _, err := os.Stat(filepath.Join(out, loadtest.ResultFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s written for bad input", loadtest.ResultFile)
			}
		})
	}
}

// loadgen --allow-remote-target follows the target policy: special-purpose addresses are refused
// even with it (the cloud metadata service among them), before any packet.
func TestLoadgenRemoteTargetPolicy(t *testing.T) {
	run := offMachine(t)
	spec := writeSpec(t, `{"protocol":"h1","scenario":{"stages":[{"duration_s":1,"target":1}]}}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "http://169.254.169.254/latest/meta-data/"}, "169.254.169.254: a special-purpose address (link-local), refused even with --allow-internet"},
		{[]string{"--target", "http://meta.example/", "--resolve", "meta.example=169.254.169.254"}, "meta.example resolves to 169.254.169.254, a special-purpose address (link-local)"},
		{[]string{"--target", "http://224.0.0.251/"}, "multicast"},
		{[]string{"--target", "http://100.64.1.1/"}, "shared address space"},
	} {
		wantRefused(t, tc.args, run(append([]string{"loadgen", "--spec", spec, "--allow-remote-target"}, tc.args...)...), tc.want)
	}
}
