package impl

import (
	"bufio"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Caddy is Caddy 2.6 from Debian's package: one Go process; HTTP/3 over QUIC (quic-go); its JSON
// configuration written directly (no Caddyfile adapter), its admin endpoint and metrics on a unix
// socket.
type Caddy struct{}

var _ Server = Caddy{}

// Name implements Server.
func (Caddy) Name() string { return "caddy" }

// Support implements Server.
func (Caddy) Support() Support {
	return Support{
		Name:        "caddy",
		Description: "Caddy (Debian's caddy package, 2.6): Go's net/http and x/net/http2, quic-go for HTTP/3",
		Package:     "caddy",
		Binary:      "/usr/bin/caddy",
		Protocols:   []string{"h1", "h1s", "h2", "h2c", "h3"},
		NotServed:   "no SPDY",
		Status:      "its metrics endpoint (Prometheus text): requests in flight and served, goroutines, resident memory",
		OwnKnobs:    "server.caddy: gomaxprocs",
		Knobs: []Knob{
			{Name: "max_concurrent_streams", Accepts: []string{"0"}, Own: "Caddy 2.6 cannot set it: its HTTP/2 server allows 250 concurrent streams, its HTTP/3 server 100"},
			{Name: "write_chunk_bytes", Accepts: []string{"0"}, Own: "Go's servers size their own writes and frames"},
			{Name: "tls_version", How: "protocol_min and protocol_max of its TLS connection policy"},
			{Name: "session_resumption", How: "session tickets on or off"},
			{Name: "keep_alive", Accepts: []string{"true"}, Own: "Caddy 2.6 always keeps HTTP/1.1 connections alive"},
			{Name: "push", Accepts: []string{"none"}, Own: "Caddy 2.6's push handler is left out (Go is dropping server push)"},
		},
	}
}

// Check implements Server.
func (c Caddy) Check(k Knobs, protocols []string) error {
	return checkCommon(c.Support(), k, protocols)
}

// Provision implements Server.
func (c Caddy) Provision(in *Provision) (*Launch, error) {
	d, err := newTemplateData(in, "caddy")
	if err != nil {
		return nil, err
	}
	if in.Knobs.Caddy != nil {
		d.Caddy = *in.Knobs.Caddy
	}
	conf := filepath.Join(in.Dir, "caddy.json")
	if err := render(in, "caddy.json.tmpl", conf, d); err != nil {
		return nil, err
	}
	env := []string{"HOME=" + in.RunDir, "XDG_DATA_HOME=" + filepath.Join(in.RunDir, "data"), "XDG_CONFIG_HOME=" + filepath.Join(in.RunDir, "config")}
	if d.Caddy.GOMAXPROCS > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(d.Caddy.GOMAXPROCS))
	}
	return &Launch{
		Argv:       []string{c.Support().Binary, "run", "--config", conf},
		Env:        env,
		Test:       []string{c.Support().Binary, "validate", "--config", conf},
		Ready:      ReadyProbe,
		StopSignal: syscall.SIGINT, // Caddy's graceful stop
		Files:      true,
		Index:      d.Index,
		AccessLog:  d.AccessLog,
		Config:     conf,
		Status: func(ctx context.Context, _ *Instance) (map[string]float64, error) {
			body, err := unixGet(ctx, d.StatusSocket, "localhost", "/metrics")
			if err != nil {
				return nil, err
			}
			return ParsePrometheus(string(body), caddyMetrics), nil
		},
		Effective: map[string]any{"max_concurrent_streams": map[string]int{"h2": 250, "h3": 100}, "write_chunk_bytes": 0,
			"tls_version": in.Knobs.TLSVersion, "session_resumption": in.Knobs.SessionResumption, "keep_alive": true, "push": "none",
			"gomaxprocs": d.Caddy.GOMAXPROCS},
	}, nil
}

// caddyMetrics are the metrics of Caddy's endpoint kept as gauges (summed over their labels).
var caddyMetrics = map[string]string{
	"caddy_http_requests_in_flight":  "requests_in_flight",
	"caddy_http_requests_total":      "requests",
	"go_goroutines":                  "goroutines",
	"process_resident_memory_bytes":  "resident_memory_bytes",
	"process_cpu_seconds_total":      "cpu_seconds",
	"process_open_fds":               "open_fds",
	"go_memstats_heap_inuse_bytes":   "heap_inuse_bytes",
	"caddy_http_response_size_bytes": "",
}

// ParsePrometheus reads Prometheus text exposition and returns the named metrics (renamed by
// keep; an empty new name drops it), each summed over its label sets.
func ParsePrometheus(text string, keep map[string]string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		as, ok := keep[name]
		if !ok || as == "" {
			continue
		}
		rest := line[len(name):]
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			out[as] += v
		}
	}
	return out
}
