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
	"strings"
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
	benchServerEnv = "WIRELAB_CLIENT_BENCH_SERVER"
)

// TestBenchServer is the benchmark's origin server; it runs only in the child process. It prints
// the server's Info as its ready line and serves until its stdin is closed.
func TestBenchServer(t *testing.T) {
	if os.Getenv(benchServerEnv) == "" {
		t.Skip("the loader benchmark's server process")
	}
	pg, err := page.Load(benchPage, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := startBuiltin(t, pg, nil)
	line, _ := json.Marshal(srv.Info())
	fmt.Printf("READY %s\n", line)
	bufio.NewReader(os.Stdin).ReadString('\n')
}

func BenchmarkLoader(b *testing.B) {
	info := startBenchServer(b)
	pg, err := page.Load(benchPage, 1) // the same deterministic page, for its URLs
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

// startBenchServer runs TestBenchServer in a child process and returns its Info.
func startBenchServer(b *testing.B) server.Info {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchServer$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
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
			return info
		}
	}
}

// cpuTime is this process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
