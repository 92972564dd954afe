package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/wirelab/wirelab/engine/contract/contracttest"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/probe"
	"github.com/wirelab/wirelab/engine/sites"
)

// The local internet end to end: `sites -- probe` classifies every reachable site of the catalog
// as its description says, records satisfy the schema, the slow site's handshakes carry its extra
// round trip, and nothing of the run is left afterwards.
func TestProbeLocalInternet(t *testing.T) {
	roottest.RequireTUN(t)
	var urls []string
	byURL := map[string]sites.Site{}
	for _, s := range sites.Catalog() {
		if _, refused := s.Expected(); !refused {
			urls = append(urls, s.URL())
			byURL[s.URL()] = s
		}
	}
	// The handshakes' upper bound depends on the machine: retried once with a new run (internal/timebound).
	timebound.Retry(t, func(a *timebound.Attempt) {
		script := `ip netns identify >&2; exec "$0" probe --rate 50/s --timeout 2s "$@"`
		cmd := engine(append([]string{"sites", "--", "sh", "-c", script, os.Args[0]}, urls...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("sites -- probe: %v\n%s", err, stderr.String())
		}
		ns := strings.TrimSpace(strings.SplitN(stderr.String(), "\n", 2)[0])
		schemas := contracttest.Load(t)
		sc := bufio.NewScanner(&stdout)
		n := 0
		for sc.Scan() {
			n++
			if err := schemas.Validate(contracttest.ProbeRecord, sc.Bytes()); err != nil {
				t.Errorf("record breaks the schema: %v\n%s", err, sc.Bytes())
			}
			var rec probe.Record
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			s := byURL[rec.Site]
			for _, m := range s.Mismatches(rec) {
				t.Error(m)
			}
			h2 := rec.Protocols[probe.H2]
			if h2.HandshakeMS == nil || h2.ConnectMS == nil {
				continue
			}
			// TCP's connect and TLS 1.3's handshake are one round trip each: 10 ms (sites.DefaultNet)
			// plus the site's extra round trip.
			rtt := 10 + float64(s.ExtraRTT.Milliseconds())
			for what, v := range map[string]float64{"connect": *h2.ConnectMS, "handshake": *h2.HandshakeMS} {
				if v < rtt {
					t.Errorf("%s h2 %s %.1f ms; want one round trip of %.0f ms (+ < 50 ms)", s.Name, what, v, rtt)
				} else if v > rtt+50 {
					a.Errorf("%s h2 %s %.1f ms; want one round trip of %.0f ms (+ < 50 ms)", s.Name, what, v, rtt)
				}
			}
		}
		if n != len(urls) {
			t.Errorf("%d records for %d sites", n, len(urls))
		}
		m := namespacePattern(ns)
		if m == "" {
			t.Fatalf("CMD did not run in a run's namespace: %q", ns)
		}
		assertGone(t, m)
		if _, err := os.Stat(filepath.Join(os.TempDir(), lab.PrivatePrefix+m)); err == nil {
			t.Errorf("the lab's private directory is left")
		}
	})
}

// A probe with nothing to contact — every site a name the local internet does not have — prints
// one line per site and exits 2, with no record on stdout; one site it can probe is enough to run.
func TestProbeNothingToContact(t *testing.T) {
	roottest.RequireTUN(t)
	cmd := engine("sites", "--", os.Args[0], "probe", "nosuch.wirelab.test", "https://gone.wirelab.test/x")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if exitCodeOf(err) != 2 || stdout.Len() != 0 || len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "wirelab-engine: probe: nosuch.wirelab.test: no address to probe") ||
		!strings.HasPrefix(lines[1], "wirelab-engine: probe: https://gone.wirelab.test/x: no address to probe") {
		t.Errorf("exit %d, stdout %q, stderr %q: want exit 2, no record, one line per site", exitCodeOf(err), stdout.String(), stderr.String())
	}
}

// namespacePattern returns the run id of a client namespace name ("" if it is none).
func namespacePattern(ns string) string {
	var id string
	if _, err := fmt.Sscanf(ns, "wirelab-%8s", &id); err != nil || !strings.HasSuffix(ns, "-c") {
		return ""
	}
	return id
}

// Without --allow-internet a name that resolves to a documentation address is refused with one
// line and exit 2, and a capture on every interface of the client namespace — whose route for
// 192.0.2.0/24 the test points into the emulated link, so that a packet could leave — shows that
// the only packet to 192.0.2.1 is the test's own control datagram.
func TestProbeRefusesBeforeAnyPacket(t *testing.T) {
	roottest.RequireTUN(t)
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("no tshark")
	}
	p, err := lab.PrepareLive(lab.FarInternet, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Start(context.Background(), p, lab.Options{Engine: os.Args[0], Env: append(os.Environ(), testMainEnv+"=1")})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	topo := l.Topo
	err = topo.Do(netns.Client, func() error {
		link, err := netlink.LinkByName(labaddr.TUNName)
		if err != nil {
			return err
		}
		_, dst, _ := net.ParseCIDR("192.0.2.0/24")
		return netlink.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK})
	})
	if err != nil {
		t.Fatal(err)
	}
	// tshark prints one line per packet to or from 192.0.2.1 (line-buffered): destination, UDP
	// and TCP destination ports.
	tshark := topo.Command(netns.Client, "tshark", "-l", "-n", "-i", "any", "-f", "host 192.0.2.1",
		"-T", "fields", "-e", "ip.dst", "-e", "udp.dstport", "-e", "tcp.dstport")
	tsOut, err := tshark.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tshark.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		tshark.Process.Signal(syscall.SIGINT)
		tshark.Wait()
	}()
	packets := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(tsOut)
		for sc.Scan() {
			packets <- strings.Join(strings.Fields(sc.Text()), " ")
		}
		close(packets)
	}()
	// control sends datagrams to 192.0.2.1:port until the capture shows one: then the capture is
	// known to see what leaves the namespace, and to have seen everything sent before.
	control := func(port int) (seen []string) {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(30 * time.Second)
		want := fmt.Sprintf("192.0.2.1 %d", port)
		for {
			err := topo.Do(netns.Client, func() error {
				c, err := net.Dial("udp4", fmt.Sprintf("192.0.2.1:%d", port))
				if err != nil {
					return err
				}
				defer c.Close()
				_, err = c.Write([]byte("control"))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for waiting := true; waiting; {
				select {
				case p, ok := <-packets:
					if !ok {
						t.Fatal("tshark ended")
					}
					seen = append(seen, p)
					if p == want {
						return seen
					}
				case <-tick.C:
					waiting = false
				case <-deadline:
					t.Fatalf("the capture did not see a datagram to port %d", port)
				}
			}
		}
	}
	control(9)
	for _, args := range [][]string{{"doc.wirelab.test"}, {"h1.wirelab.test", "https://doc.wirelab.test/"}, {"192.0.2.1"}} {
		probeCmd := l.Command(append([]string{os.Args[0], "probe"}, args...)...)
		probeCmd.Env = append(probeCmd.Env, testMainEnv+"=1")
		var stdout, stderr bytes.Buffer
		probeCmd.Stdout, probeCmd.Stderr = &stdout, &stderr
		code := exitCodeOf(probeCmd.Run())
		msg := strings.TrimSpace(stderr.String())
		if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, "192.0.2.1") || !strings.Contains(msg, "--allow-internet") || stdout.Len() != 0 {
			t.Errorf("probe %v: exit %d, stderr %q, %d bytes out; want exit 2 and one line", args, code, msg, stdout.Len())
		}
	}
	for _, p := range control(10) {
		if p != "192.0.2.1 9" && p != "192.0.2.1 10" {
			t.Errorf("a packet to 192.0.2.1 that is not the test's control: %q", p)
		}
	}
}
