package client

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// Loader overhead on loopback: the corpus page `imgur` (study E: 133 resources of 11.78 kB on
// average, over its origins) from the built-in server. The server runs in a child process (this
// test binary, re-executed into TestBenchServer), so the CPU time and allocations measured in the
// benchmark process are the loader's alone.
//
//	go test -run '^$' -bench Loader -benchtime 50x ./client/
//
// Reported per load: cpu-ms (user + system time of this process), plt-ms (median), allocs and
// bytes (ReportAllocs).

const (
	benchPage      = "imgur"
	benchServerEnv = "WIRELAB_CLIENT_BENCH_SERVER" // its value names the page the child serves
)

// TestBenchServer is the benchmark's origin server; it runs only in the child process. It prints
// the server's Info as its ready line and serves until its stdin is closed.
func TestBenchServer(t *testing.T) {
	if os.Getenv(benchServerEnv) == "" {
		t.Skip("the loader benchmark's server process")
	}
	pg, err := page.Load(os.Getenv(benchServerEnv), 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := startBuiltin(t, pg, nil)
	line, _ := json.Marshal(srv.Info())
	fmt.Printf("READY %s\n", line)
	bufio.NewReader(os.Stdin).ReadString('\n')
}

func BenchmarkLoader(b *testing.B) {
	lab := startBenchServer(b, benchPage)
	info, pg, pool, resolver := lab.info, lab.pg, lab.pool, lab.resolver
	for _, proto := range []Protocol{H2, H1S, H3, H1, H2C} {
		b.Run(string(proto), func(b *testing.B) {
			l, err := New(Config{Protocol: proto, Resolver: resolver, RootCAs: pool, Timeout: 30 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			load := func() *Result {
				root, err := pg.URL(0, page.Base{Scheme: proto.Scheme(), Port: info.Ports.Port(server.Protocol(proto)), Token: page.NewToken()})
				if err != nil {
					b.Fatal(err)
				}
				res, err := l.Load(context.Background(), root, nil)
				if err != nil || res.Err != nil || res.Objects != len(pg.Objects) {
					b.Fatalf("load: %v %v, %d objects", err, res.Err, res.Objects)
				}
				return res
			}
			load() // warm up code paths (every load opens new connections)
			plts := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				plts = append(plts, load().PLT)
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			slices.Sort(plts)
			b.ReportMetric(ms(cpu)/float64(b.N), "cpu-ms/load")
			b.ReportMetric(ms(plts[len(plts)/2]), "plt-ms")
		})
	}
}

// The load generator's page loop (engine/loadgen, `bench loadgen`): tabUsers lean Tabs with kept
// connections load study N's page `neoload50` (the root, then its 50 images) without pause, from
// the built-in server in a child process. b.N counts pages over all tabs.
//
//	go test -run '^$' -bench TabLoop -benchtime 2000x -cpuprofile cpu.out ./client/
//
// Reported: cpu-µs/request (user + system time of this process ÷ requests), user-µs/request (user
// time alone: the Go side, what the kernel's system calls do not include), allocs and bytes per
// page (ReportAllocs), pages/s.
func BenchmarkTabLoop(b *testing.B) {
	const tabUsers = 20
	lab := startBenchServer(b, "neoload50")
	info, pg, pool, resolver := lab.info, lab.pg, lab.pool, lab.resolver
	for _, proto := range []Protocol{H1, H1S, H2} {
		b.Run(string(proto), func(b *testing.B) {
			l, err := New(Config{Protocol: proto, Resolver: resolver, RootCAs: pool, Timeout: 30 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			root, err := pg.URL(0, page.Base{Scheme: proto.Scheme(), Port: info.Ports.Port(server.Protocol(proto)), Token: page.NewToken()})
			if err != nil {
				b.Fatal(err)
			}
			var requests atomic.Int64
			tabs := make([]*Tab, tabUsers)
			for i := range tabs {
				tabs[i] = l.NewTab(TabOptions{Lean: true, OnRequest: func(st RequestStats) {
					if st.Err != nil {
						b.Error(st.Err)
					}
					requests.Add(1)
				}})
				defer tabs[i].Close()
				if res, err := tabs[i].Load(context.Background(), root, nil); err != nil || res.Err != nil { // warm: connections open
					b.Fatalf("load: %v %v", err, res.Err)
				}
			}
			requests.Store(0)
			var next atomic.Int64
			b.ReportAllocs()
			cpu0, user0, t0 := cpuTime(), userTime(), time.Now()
			r0, w0 := syscallsIO()
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, tab := range tabs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if res, err := tab.Load(context.Background(), root, nil); err != nil || res.Err != nil {
							b.Errorf("load: %v %v", err, res.Err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			cpu, user, secs := cpuTime()-cpu0, userTime()-user0, time.Since(t0).Seconds()
			r1, w1 := syscallsIO()
			n := float64(requests.Load())
			b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/request")
			b.ReportMetric(float64(user.Microseconds())/n, "user-µs/request")
			b.ReportMetric(float64(r1-r0)/n, "reads/request")
			b.ReportMetric(float64(w1-w0)/n, "writes/request")
			b.ReportMetric(float64(b.N)/secs, "pages/s")
		})
	}
}

// startBenchServer runs TestBenchServer in a child process: its Info, with the page, the CA pool
// and the resolver a loader of the benchmark uses.
func startBenchServer(b *testing.B, pageName string) benchLab {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchServer$")
	cmd.Env = append(os.Environ(), benchServerEnv+"="+pageName)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	for sc := bufio.NewScanner(stdout); ; {
		if !sc.Scan() {
			b.Fatalf("server process ended before its ready line: %v", sc.Err())
		}
		if line, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
			var info server.Info
			if err := json.Unmarshal([]byte(line), &info); err != nil {
				b.Fatal(err)
			}
			return newBenchLab(b, info, pageName)
		}
	}
}

// benchLab is the loader benchmarks' server process and what a loader needs to reach it.
type benchLab struct {
	info     server.Info
	pg       *page.Page // the server's page, built again here (deterministic), for its URLs
	pool     *x509.CertPool
	resolver StaticResolver
}

func newBenchLab(b *testing.B, info server.Info, pageName string) benchLab {
	pg, err := page.Load(pageName, 1)
	if err != nil {
		b.Fatal(err)
	}
	pem, err := os.ReadFile(info.CAFile)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	resolver := StaticResolver{}
	for _, o := range info.Origins {
		resolver[o.Host] = mustAddr(o.Addr)
	}
	return benchLab{info: info, pg: pg, pool: pool, resolver: resolver}
}

// syscallsIO is how many read and write system calls this process made (/proc/self/io: syscr,
// syscw; failed ones — EAGAIN — included).
func syscallsIO() (reads, writes int64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// cpuTime is this process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// userTime is this process's user CPU time.
func userTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano())
}
