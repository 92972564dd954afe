package client

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Loader overhead on loopback. The origin server runs in a child process (this test binary,
// re-executed into TestBenchServer), so CPU time and allocations measured in the benchmark
// process are the loader's alone.
//
//	go test -run '^$' -bench Loader -benchtime 50x ./client/
//
// Reported per load: cpu-ms (user + system time of this process), plt-ms (median), allocs and
// bytes (from -benchmem / ReportAllocs).

const (
	benchObjects   = 133   // imgur (study E): 133 resources …
	benchMeanBytes = 11780 // … of 11.78 kB on average
	benchServerEnv = "WIRELAB_CLIENT_BENCH_SERVER"
)

// benchServerInfo is the child's ready line.
type benchServerInfo struct {
	Root    string            `json:"root"`
	Resolve map[string]string `json:"resolve"`
	CA      []byte            `json:"ca"` // DER
}

// TestBenchServer is the benchmark's origin server; it runs only in the child process.
func TestBenchServer(t *testing.T) {
	proto := Protocol(os.Getenv(benchServerEnv))
	if proto == "" {
		t.Skip("the loader benchmark's server process")
	}
	s := newSite(t, proto, 1, 0, serverOpts{})
	s.setPage(benchPage(s.origins[0]))
	info := benchServerInfo{Root: s.root(), Resolve: map[string]string{}, CA: testPKI().caDER}
	for name, a := range s.resolver {
		info.Resolve[name] = a.String()
	}
	line, _ := json.Marshal(info)
	fmt.Printf("READY %s\n", line)
	// Serve until the parent closes our stdin.
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// benchPage is a root document referencing benchObjects−1 images whose sizes average
// benchMeanBytes (uniform ±50 %), all on one origin.
func benchPage(base string) *testPage {
	rng := mrand.New(mrand.NewPCG(133, 11780))
	p := &testPage{objects: map[string]*testObject{}, want: map[string]int{}}
	var html strings.Builder
	html.WriteString("<!doctype html><html><head><title>bench</title></head><body>\n")
	for i := range benchObjects - 1 {
		path := fmt.Sprintf("/img/%03d.jpg", i)
		size := benchMeanBytes/2 + rng.IntN(benchMeanBytes)
		p.add(base, path, "image/jpeg", randomBytes(rng, size))
		fmt.Fprintf(&html, "<img src=%q alt=\"\">\n", base+path)
	}
	html.WriteString("</body></html>\n")
	p.add(base, "/", "text/html", []byte(html.String()))
	return p
}

func BenchmarkLoader(b *testing.B) {
	for _, proto := range []Protocol{H2, H1S, H3, H1} {
		b.Run(string(proto), func(b *testing.B) { benchmarkLoader(b, proto) })
	}
}

func benchmarkLoader(b *testing.B, proto Protocol) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchServer$", "-test.v=false")
	cmd.Env = append(os.Environ(), benchServerEnv+"="+string(proto))
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
	var info benchServerInfo
	for sc := bufio.NewScanner(stdout); ; {
		if !sc.Scan() {
			b.Fatalf("server process ended before its ready line: %v", sc.Err())
		}
		if line, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
			if err := json.Unmarshal([]byte(line), &info); err != nil {
				b.Fatal(err)
			}
			break
		}
	}
	ca, err := x509.ParseCertificate(info.CA)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	resolver := StaticResolver{}
	for name, a := range info.Resolve {
		resolver[name] = netip.MustParseAddr(a)
	}
	l, err := New(Config{Protocol: proto, Resolver: resolver, RootCAs: pool, Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	load := func() *Result {
		res, err := l.Load(context.Background(), info.Root, nil)
		if err != nil || res.Err != nil || res.Objects != benchObjects {
			b.Fatalf("load: %v %v, %d objects", err, res.Err, res.Objects)
		}
		return res
	}
	load() // warm up: code paths, not connections (every load starts fresh)
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
}

// cpuTime is this process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
