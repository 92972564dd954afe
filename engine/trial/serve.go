package trial

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/server"
)

// serveReady is the part of `serve`'s ready line the trial uses.
type serveReady struct {
	Event  string `json:"event"`
	PID    int    `json:"pid"`
	CAFile string `json:"ca_file"`
	SPKI   string `json:"spki_sha256"`
	DNS    string `json:"dns"`
	Ports  struct {
		HTTP  int `json:"http"`
		HTTPS int `json:"https"`
		QUIC  int `json:"quic"`
	} `json:"ports"`
	Origins []struct {
		Host string `json:"host"`
		Addr string `json:"addr"`
	} `json:"origins"`
}

// serveProcess is the trial's one `wirelab-engine serve`, in the server namespace, serving every
// origin (and the DNS server).
type serveProcess struct {
	cmd    *exec.Cmd
	ready  serveReady
	line   string
	exited chan struct{} // closed when the process has exited
	err    error         // its exit error, valid once exited is closed

	mu      sync.Mutex
	quic    map[string]quicClosed // by the client's address:port, until taken
	changed chan struct{}         // closed (and replaced) when quic gains an entry
}

// quicClosed is serve's {"event":"quic_closed",…} line: an h3 connection ended.
type quicClosed struct {
	Event       string `json:"event"`
	Remote      string `json:"remote"`
	PacketsSent int64  `json:"packets_sent"`
	PacketsLost int64  `json:"packets_lost"`
}

// forgetQUIC drops reports not taken so far (connections of earlier loads).
func (sp *serveProcess) forgetQUIC() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	clear(sp.quic)
}

func (sp *serveProcess) addQUIC(q quicClosed) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.quic[q.Remote] = q
	close(sp.changed)
	sp.changed = make(chan struct{})
}

// takeQUIC waits up to limit for the end of the h3 connections from remotes (client address:port)
// and returns the packets the server declared lost on them, and how many did not report.
func (sp *serveProcess) takeQUIC(ctx context.Context, remotes []string, limit time.Duration) (lost int64, missing int) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		sp.mu.Lock()
		missing, lost = 0, 0
		for _, r := range remotes {
			if q, ok := sp.quic[r]; ok {
				lost += q.PacketsLost
			} else {
				missing++
			}
		}
		changed := sp.changed
		if missing == 0 {
			for _, r := range remotes {
				delete(sp.quic, r)
			}
		}
		sp.mu.Unlock()
		if missing == 0 {
			return lost, 0
		}
		select {
		case <-changed:
		case <-timer.C:
			return lost, missing
		case <-ctx.Done():
			return lost, missing
		case <-sp.exited:
			return lost, missing
		}
	}
}

// serveArgs are the serve flags for a prepared trial. serve speaks every protocol of the trial
// (spdy3 on the TLS port, beside h1s and h2, chosen by ALPN) and pushes per server.push.
func serveArgs(p *Prepared, certDir, recordsFile, connsFile string) []string {
	s := p.Spec
	addrs := make([]string, p.Origins())
	for i := range addrs {
		addrs[i] = netns.OriginAddr(i + 1).String()
	}
	mcs := s.Server.MaxConcurrentStreams
	if mcs == 0 { // the implementation's own default
		mcs = server.DefaultConfig().MaxConcurrentStreams
	}
	args := []string{"serve",
		"--page", p.PageArg,
		"--seed", strconv.FormatInt(s.Seed, 10),
		"--shards", strconv.Itoa(s.Shards),
		"--shard-mode", s.ShardMode,
		"--addrs", strings.Join(addrs, ","),
		"--protocols", strings.Join(s.Protocols, ","),
		"--max-concurrent-streams", strconv.Itoa(mcs),
		"--write-chunk-bytes", strconv.Itoa(s.Server.WriteChunkBytes),
		"--tls-version", s.Server.TLSVersion,
		"--session-resumption=" + strconv.FormatBool(s.Server.SessionResumption),
		"--keep-alive=" + strconv.FormatBool(s.Server.KeepAlive),
		"--push", s.Server.Push,
		"--cert-dir", certDir,
	}
	if s.Client.DNS == "server" {
		args = append(args, "--dns", netns.DNSAddr.String()+":53")
	}
	if recordsFile != "" {
		args = append(args, "--records", recordsFile)
	}
	if connsFile != "" {
		args = append(args, "--conns", connsFile)
	}
	if slices.Contains(s.Protocols, "h3") {
		args = append(args, "--quic-stats")
	}
	return args
}

// serveStartLimit bounds how long the server may take to come up (page generation for the largest
// pages, certificates, listeners).
const serveStartLimit = 60 * time.Second

// startServe starts serve in the server namespace and waits for its ready line on stdout (it prints
// it once every listener and the DNS server accept). Its stderr and later stdout lines go to log.
func startServe(ctx context.Context, topo *netns.Topology, engine string, env []string, args []string, log *engineLog) (*serveProcess, error) {
	cmd := topo.Command(netns.Server, append([]string{engine}, args...)...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	sp := &serveProcess{cmd: cmd, exited: make(chan struct{}), quic: map[string]quicClosed{}, changed: make(chan struct{})}
	tail := &lineTail{max: 5}
	pipes := make(chan struct{}, 2)
	go func() {
		copyLines(stderr, func(l string) { tail.add(l); log.printf("serve: %s", l) })
		pipes <- struct{}{}
	}()
	readyCh := make(chan string, 1)
	go func() {
		first := true
		copyLines(stdout, func(l string) {
			if first {
				first = false
				readyCh <- l
				return
			}
			var q quicClosed
			if json.Unmarshal([]byte(l), &q) == nil && q.Event == "quic_closed" {
				sp.addQUIC(q)
				return
			}
			log.printf("serve: %s", l)
		})
		close(readyCh)
		pipes <- struct{}{}
	}()
	go func() {
		<-pipes
		<-pipes
		sp.err = cmd.Wait()
		close(sp.exited)
	}()
	timer := time.NewTimer(serveStartLimit)
	defer timer.Stop()
	select {
	case line, ok := <-readyCh:
		if ok {
			sp.line = line
			if err := json.Unmarshal([]byte(line), &sp.ready); err != nil || sp.ready.Event != "ready" {
				sp.stop(5 * time.Second)
				return nil, fmt.Errorf("server: unexpected first line %q", line)
			}
			return sp, nil
		}
		<-sp.exited
		return nil, fmt.Errorf("server exited before it was ready (%v): %s", sp.err, tail.String())
	case <-ctx.Done():
		sp.stop(5 * time.Second)
		return nil, ctx.Err()
	case <-timer.C:
		sp.stop(5 * time.Second)
		return nil, fmt.Errorf("server: not ready after %s: %s", serveStartLimit, tail.String())
	}
}

// alive reports whether serve still runs.
func (sp *serveProcess) alive() bool {
	select {
	case <-sp.exited:
		return false
	default:
		return true
	}
}

// stop asks serve to stop (SIGTERM: it closes its listeners, writes its records and exits) and
// waits up to grace; the topology's Close kills whatever is left.
func (sp *serveProcess) stop(grace time.Duration) error {
	if !sp.alive() {
		return nil
	}
	_ = sp.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-sp.exited:
		return nil
	case <-t.C:
		_ = sp.cmd.Process.Kill()
		<-sp.exited
		return errors.New("server did not stop within " + grace.String() + "; killed")
	}
}

// copyLines calls fn for every line of r until EOF.
func copyLines(r io.Reader, fn func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
	_, _ = io.Copy(io.Discard, r)
}

// lineTail keeps the last lines written (for error messages).
type lineTail struct {
	max   int
	mu    sync.Mutex
	lines []string
}

func (t *lineTail) add(l string) {
	if strings.TrimSpace(l) == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, l)
	if len(t.lines) > t.max {
		t.lines = t.lines[1:]
	}
}

func (t *lineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return "no output"
	}
	return strings.Join(t.lines, " | ")
}
