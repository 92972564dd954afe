package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
)

// aqmAttempt runs, through `shell`, a bulk TCP download from the server namespace for 9 s and,
// from its 4th second, 20 short TCP connects 150 ms apart, on a 10 Mbit/s, 50 ms RTT path with
// the given queue. It returns the connects' median time and the kernel's median first RTT sample.
func aqmAttempt(t *testing.T, queue string) (connect, kernel float64, evidence string) {
	t.Helper()
	self := os.Args[0]
	dir := t.TempDir()
	script := fmt.Sprintf(`%[1]s bench-peer receive 10.77.1.1:9000 1s 8s > %[2]s/bulk.json &
sleep 3 # let the bulk transfer build its standing queue
%[1]s bench-peer connect 10.77.1.1:9000 20 1 150ms
wait`, self, dir)
	cmd := engine("shell", "--net", "rtt=50ms,bw=10mbit,queue="+queue, "--stats", filepath.Join(dir, "stats.json"),
		"--server-cmd", "exec "+self+" bench-peer serve 10.77.1.1:9000", "--server-port", "9000", "--", "sh", "-c", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("queue=%s: %v\n%s", queue, err, stderr.Bytes())
	}
	var r struct {
		ConnectMs   []float64 `json:"connect_ms"`
		KernelRTTMs []float64 `json:"kernel_rtt_ms"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || len(r.ConnectMs) != 20 {
		t.Fatalf("queue=%s: peer printed %q (%v)", queue, out, err)
	}
	median := func(xs []float64) float64 { sort.Float64s(xs); return xs[len(xs)/2] }
	stats, _ := os.ReadFile(filepath.Join(dir, "stats.json"))
	var st struct {
		Emulator struct {
			Down struct {
				Drops     int64           `json:"drops_queue"`
				SojournMs json.RawMessage `json:"sojourn_ms"`
			} `json:"down"`
		} `json:"emulator"`
	}
	_ = json.Unmarshal(stats, &st)
	connect, kernel = median(r.ConnectMs), median(r.KernelRTTMs)
	return connect, kernel, fmt.Sprintf("queue=%s: connect ms %v; kernel RTT ms %v; down drops %d, sojourn %s",
		queue, r.ConnectMs, r.KernelRTTMs, st.Emulator.Down.Drops, st.Emulator.Down.SojournMs)
}

// TestShellAQMKeepsConnectsShort: beside a bulk download at 10 Mbit/s and 50 ms RTT, a drop-tail
// queue of 256 packets inflates short connects by its standing queue (up to 256 × 1.2 ms), while
// FQ-CoDel serves their handshakes as a sparse flow's, within a few ms of the RTT
// (docs/network.md, "Queue disciplines in real time"). A timing bound on a shared machine: each
// case gets a second attempt, and a failure reports both (internal/timebound).
func TestShellAQMKeepsConnectsShort(t *testing.T) {
	roottest.RequireTUN(t)
	for _, c := range []struct {
		queue string
		ok    func(connect, kernel float64) bool
		want  string
	}{
		{"256", func(c, k float64) bool { return c >= 200 && k >= 200 }, "median connect and kernel RTT ≥ 200 ms (the standing queue)"},
		{"fq_codel", func(c, k float64) bool { return c <= 55 && k <= 55 }, "median connect and kernel RTT ≤ 55 ms"},
	} {
		t.Run("queue="+c.queue, func(t *testing.T) {
			timebound.Retry(t, func(a *timebound.Attempt) {
				connect, kernel, evidence := aqmAttempt(t, c.queue)
				if !c.ok(connect, kernel) {
					a.Errorf("median connect %.1f ms, kernel RTT %.1f ms; want %s; %s", connect, kernel, c.want, evidence)
					return
				}
				t.Logf("median connect %.1f ms, kernel RTT %.1f ms; %s", connect, kernel, evidence)
			})
		})
	}
}
