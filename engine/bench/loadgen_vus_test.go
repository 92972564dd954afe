package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/page"
)

// This machine's limits: hard RLIMIT_NOFILE 20 000 without CAP_SYS_RESOURCE, the default port
// range, a large fs.file-max.
var here = MachineLimits{OpenFiles: 20000, OpenFilesHard: 20000, FileMax: 2466170, FilesInUse: 3000, PortSpan: 28232, PortRange: "32768 60999"}

func TestPlanVUsFromTheOpenFilesLimit(t *testing.T) {
	for _, c := range []struct {
		name         string
		vus, fds     int
		m            MachineLimits
		procs, per   int
		boundContain string
	}{
		{"10⁵ h2 VUs here", 100000, 1, here, 6, 19744, "RLIMIT_NOFILE 20000"},
		{"10⁴ fit one process", 10000, 1, here, 1, 19744, "RLIMIT_NOFILE 20000"},
		{"exactly one process's worth", 19744, 1, here, 1, 19744, "RLIMIT_NOFILE 20000"},
		{"one more VU, one more pair", 19745, 1, here, 2, 19744, "RLIMIT_NOFILE 20000"},
		{"six connections per VU (h1, many objects)", 10000, 6, here, 4, 3290, "RLIMIT_NOFILE 20000"},
		// With CAP_SYS_RESOURCE the limit is fs.nr_open: the port range of one pair binds.
		{"the port range binds", 100000, 1, MachineLimits{OpenFiles: 1 << 20, FileMax: 1 << 24, PortSpan: 28232, PortRange: "32768 60999"}, 4, 27976, "ip_local_port_range 32768 60999"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := PlanVUs(c.vus, c.fds, c.m)
			if err != nil {
				t.Fatal(err)
			}
			if p.Generators != c.procs || p.Servers != c.procs || p.PerProcess != c.per || !strings.Contains(p.BoundBy, c.boundContain) {
				t.Errorf("plan %+v; want %d generators and servers of %d VUs, bound by %q", p, c.procs, c.per, c.boundContain)
			}
			if p.Generators*p.PerProcess < c.vus || (p.Generators-1)*p.PerProcess >= c.vus {
				t.Errorf("%d processes of %d VUs for %d VUs: not the fewest that hold them", p.Generators, p.PerProcess, c.vus)
			}
		})
	}
}

func TestPlanVUsNamesTheLimit(t *testing.T) {
	for _, c := range []struct {
		name string
		vus  int
		m    MachineLimits
		want []string
	}{
		{"a container's 1024", 100000, MachineLimits{OpenFiles: 1024, FileMax: 1 << 24, PortSpan: 28232, PortRange: "32768 60999"},
			[]string{"100000 VUs need 131 generator and 131 server processes", "RLIMIT_NOFILE 1024 per process", "at most 64", "ulimit -Hn"}},
		{"no room for one VU", 10, MachineLimits{OpenFiles: 200, FileMax: 1 << 24, PortSpan: 28232},
			[]string{"cannot hold one VU's 1 connections", "RLIMIT_NOFILE 200"}},
		{"fs.file-max", 100000, MachineLimits{OpenFiles: 20000, FileMax: 150000, FilesInUse: 2000, PortSpan: 28232},
			[]string{"above the system's limit (fs.file-max 150000)", "sysctl -w fs.file-max="}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := PlanVUs(c.vus, 1, c.m)
			if err == nil {
				t.Fatal("planned; want the limit named")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("not one line: %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
		})
	}
}

func TestFDsPerVU(t *testing.T) {
	one, err := page.Load("synthetic:1x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	many, err := page.Load("synthetic:20x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pg    *page.Page
		proto string
		want  int
	}{{one, "h2", 1}, {one, "h1s", 1}, {many, "h2", 1}, {many, "h1", 6}, {many, "h1s", 6}} {
		if got := FDsPerVU(c.pg, c.proto); got != c.want {
			t.Errorf("%d objects over %s: %d connections per VU; want %d", len(c.pg.Objects), c.proto, got, c.want)
		}
	}
}

// The hold's figures come from its last full interval (the very last ends as the VUs leave),
// memory per VU from the memory read beside it.
func TestFillVUsRowReadsTheHold(t *testing.T) {
	iv := func(k, vus int, pages float64, rss int64, conns int64) loadgen.Interval {
		v := loadgen.Interval{Index: k, TStartS: float64(5 * k), TEndS: float64(5*k + 5), VUs: vus, PagesPerS: pages, OpenConnections: conns}
		v.Generator.RSSBytes, v.Generator.CPUUtil = rss, 0.3
		return v
	}
	ivs := []loadgen.Interval{iv(0, 1000, 10, 50e6, 1000), iv(1, 2000, 20, 90e6, 2000), iv(2, 2000, 30, 100e6, 2000), iv(3, 2000, 40, 100e6, 2000), iv(4, 0, 50, 100e6, 0)}
	ivs[3].Errors.Timeout = 1
	mem := []int64{40e6, 70e6, 80e6, 80e6, 10e6}
	srvCPU := []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second, 9 * time.Second}
	t0 := time.Now()
	srvAt := []time.Time{t0.Add(5 * time.Second), t0.Add(10 * time.Second), t0.Add(15 * time.Second), t0.Add(20 * time.Second), t0.Add(40 * time.Second)}
	loads := []string{"1", "2", "3", "4", "5"}
	row := &VUsRow{VUs: 2000, ThinkS: 30}
	fillVUsRow(row, nil, ivs, mem, srvCPU, srvAt, loads, 10*time.Second, 15*time.Second)
	// The hold is intervals 2–4 (t = 10–25 s), the last left out (it ends as the VUs leave, and
	// arrives at the end): pages 35/s; the servers' CPU from the read with interval 1 to the one
	// with 3, over the 10 s of wall time between them (4 s of CPU).
	if row.CPUCores != 0.3 || row.ServerCores == nil || *row.ServerCores != 0.4 || row.GenMsPerPage != 8.571 || row.ServerMsPerPage == nil || *row.ServerMsPerPage != 11.429 || row.LoadHoldEnd != "4" {
		t.Errorf("CPU: generators %v cores %v ms per page, server %v cores %v ms per page, load %q; want 0.3, 8.571, 0.4, 11.429, 4",
			row.CPUCores, row.GenMsPerPage, fmtPtr(row.ServerCores), fmtPtr(row.ServerMsPerPage), row.LoadHoldEnd)
	}
	// The server's CPU not measured: null, not 0.
	row = &VUsRow{VUs: 2000, ThinkS: 30}
	fillVUsRow(row, nil, ivs, mem, nil, srvAt, loads, 10*time.Second, 15*time.Second)
	if row.ServerCores != nil || row.ServerMsPerPage != nil || row.GenMsPerPage != 8.571 {
		t.Errorf("server CPU not measured: %v cores, %v ms per page (generators %v); want null, null (8.571)", fmtPtr(row.ServerCores), fmtPtr(row.ServerMsPerPage), row.GenMsPerPage)
	}
	if b, _ := json.Marshal(row); !strings.Contains(string(b), `"server_cores_hold":null`) || !strings.Contains(string(b), `"server_cpu_ms_per_page":null`) {
		t.Errorf("server CPU not measured: JSON %s; want server_cores_hold and server_cpu_ms_per_page null", b)
	}
	// Intervals 3 and 4 merged together, at the end: their read is not the hold's, the one with 2 is.
	srvAt[3] = srvAt[4]
	row = &VUsRow{VUs: 2000, ThinkS: 30}
	fillVUsRow(row, nil, ivs, mem, srvCPU, srvAt, loads, 10*time.Second, 15*time.Second)
	if row.ServerCores == nil || *row.ServerCores != 0.2 {
		t.Errorf("server %v cores with intervals 3 and 4 read together; want 0.2 (1 s over the 5 s from the read with 1 to the one with 2)", fmtPtr(row.ServerCores))
	}
	srvAt[3] = t0.Add(20 * time.Second)
	if row.CleanVUs != 2000 || row.CleanS != 15 || row.NoErrorVUs != 2000 || row.NoErrorS != 15 {
		t.Errorf("clean up to %d VUs at %v s, no error up to %d at %v s; want 2000 at 15 both (interval 3 had an error)", row.CleanVUs, row.CleanS, row.NoErrorVUs, row.NoErrorS)
	}
	// The figures per page divide the unrounded cores: 0.004 cores is 0.00 rounded, 0.114 ms per page at 35 pages/s.
	for k := range ivs {
		ivs[k].Generator.CPUUtil = 0.004
	}
	row = &VUsRow{VUs: 2000, ThinkS: 30}
	fillVUsRow(row, nil, ivs, mem, srvCPU, srvAt, loads, 10*time.Second, 15*time.Second)
	if row.CPUCores != 0 || row.GenMsPerPage != 0.114 {
		t.Errorf("generators %v cores, %v ms per page; want 0 (rounded) and 0.114", row.CPUCores, row.GenMsPerPage)
	}
	for k := range ivs {
		ivs[k].Generator.CPUUtil = 0.3
	}
	// A page p99 above 1 s ends the clean stretch, not the error-free one.
	ivs[1].PageMs = &loadgen.Latency{P99: 1500}
	row = &VUsRow{VUs: 2000, ThinkS: 30}
	fillVUsRow(row, nil, ivs, mem, srvCPU, srvAt, loads, 10*time.Second, 15*time.Second)
	if row.CleanVUs != 1000 || row.CleanS != 5 || row.NoErrorVUs != 2000 || row.NoErrorS != 15 {
		t.Errorf("clean up to %d VUs at %v s, no error up to %d at %v s; want 1000 at 5 and 2000 at 15", row.CleanVUs, row.CleanS, row.NoErrorVUs, row.NoErrorS)
	}
	ivs[1].PageMs = nil
	// Without the error: clean to the end, the last interval's leaving VUs aside.
	ivs[3].Errors.Timeout = 0
	row = &VUsRow{VUs: 2000, ThinkS: 30}
	fillVUsRow(row, nil, ivs, mem, srvCPU, srvAt, loads, 10*time.Second, 15*time.Second)
	if row.CleanVUs != 2000 || row.CleanS != 20 {
		t.Errorf("clean up to %d VUs at %v s; want 2000 at 20 (interval 4 ends with the VUs gone)", row.CleanVUs, row.CleanS)
	}
	if row.PagesPerSHold != 35 || row.VUsHeld != 2000 || row.MemoryBytes != 80e6 || row.OpenConnections != 2000 {
		t.Errorf("hold: %+v", row)
	}
	if row.BytesPerVU != 40000 || row.BytesPerVUMarg != 40000 || row.RSSBytesPerVU != 50000 {
		t.Errorf("per VU: %v total, %v added, %v RSS; want 40000, 40000, 50000", row.BytesPerVU, row.BytesPerVUMarg, row.RSSBytesPerVU)
	}
}

func fmtPtr(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

// nginx's knobs in the vus part: a worker per generator, worker_connections above the plan's
// per-process connections by a margin that grows with √n (reuseport hashes, so the workers'
// shares spread), the benchmark's own keys kept.
func TestVUKnobs(t *testing.T) {
	for _, c := range []struct {
		plan VUPlan
		want int
	}{
		{VUPlan{FDsPerVU: 1, PerProcess: 300, Servers: 4, Generators: 4}, 300 + 70 + 64},        // 4·√300 = 69.3
		{VUPlan{FDsPerVU: 1, PerProcess: 25_000, Servers: 4, Generators: 4}, 25_000 + 633 + 64}, // 4·√25,000 = 632.5
		{VUPlan{FDsPerVU: 6, PerProcess: 1000, Servers: 2, Generators: 2}, 6000 + 310 + 64},     // 4·√6,000 = 309.8
	} {
		s, err := VUKnobs("nginx", c.plan)
		if err != nil {
			t.Fatal(err)
		}
		var own struct {
			WorkerProcesses   int  `json:"worker_processes"`
			WorkerConnections int  `json:"worker_connections"`
			KeepaliveRequests int  `json:"keepalive_requests"`
			KeepaliveTimeoutS int  `json:"keepalive_timeout_s"`
			Reuseport         bool `json:"reuseport"`
			OpenFileCache     int  `json:"open_file_cache"`
		}
		if err := json.Unmarshal(s.Own, &own); err != nil {
			t.Fatal(err)
		}
		if own.WorkerProcesses != c.plan.Servers || own.WorkerConnections != c.want || own.KeepaliveRequests != BenchKeepaliveRequests ||
			own.KeepaliveTimeoutS != BenchKeepaliveTimeoutS || !own.Reuseport || own.OpenFileCache != BenchOpenFileCache {
			t.Errorf("plan %+v: %s; want %d workers of %d connections, the benchmark's keepalive_requests, timeout, reuseport and open_file_cache",
				c.plan, s.Own, c.plan.Servers, c.want)
		}
	}
	if _, err := VUKnobs("apache", VUPlan{FDsPerVU: 1, PerProcess: 1, Servers: 1}); err == nil {
		t.Error("apache: want an error naming the servers the vus part runs on")
	}
	// BenchKnobs is the same object without the vus part's keys.
	if b := BenchKnobs("nginx"); !strings.Contains(string(b.Own), `"keepalive_requests":1000000000`) || strings.Contains(string(b.Own), `"reuseport":true`) {
		t.Errorf("BenchKnobs(nginx): %s; want keepalive_requests 10⁹ and no reuseport", b.Own)
	}
}
