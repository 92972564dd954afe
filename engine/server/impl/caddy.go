package impl

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wirelab/wirelab/engine/spec"
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
		Files:       true,
		Status:      "its metrics endpoint (Prometheus text): requests in flight and served, goroutines, resident memory",
		OwnKnobs:    "server.caddy: gomaxprocs",
		Knobs: []Knob{
			cannot("caddy", "max_concurrent_streams", "Caddy 2.6 cannot set it: its HTTP/2 server allows 250 concurrent streams, its HTTP/3 server 100"),
			cannot("caddy", "write_chunk_bytes", "Go's servers size their own writes and frames"),
			{Name: "tls_version", How: "protocol_min and protocol_max of its TLS connection policy"},
			{Name: "session_resumption", How: "session tickets on or off"},
			cannot("caddy", "keep_alive", "Caddy 2.6 always keeps HTTP/1.1 connections alive"),
			cannot("caddy", "push", "Caddy 2.6's push handler is left out (Go is dropping server push)"),
		},
	}
}

// Check implements Server.
func (c Caddy) Check(s spec.Server, protocols []string) error {
	return checkCommon(c.Support(), s, protocols)
}

// Version implements Server: "caddy/" and the first word of `caddy version` ("v2.6.2").
func (c Caddy) Version() string {
	return versionOf([]string{c.Support().Binary, "version"}, func(line string) (string, bool) {
		if line == "" {
			return "", false
		}
		return "caddy/" + strings.Fields(line)[0], true
	})
}

// CaddyKnobs are Caddy's own settings: the spec's server.caddy.
type CaddyKnobs struct {
	GOMAXPROCS int `json:"gomaxprocs"` // 0 = one per CPU
}

// NewKnobs implements OwnKnobs.
func (Caddy) NewKnobs() any { return &CaddyKnobs{} }

// Provision implements Server.
func (c Caddy) Provision(in *Provision) (*Launch, error) {
	var own CaddyKnobs
	td, conf, err := configure(in, "caddy", "caddy.json.tmpl", "caddy.json", &own, func(td *TemplateData) any {
		return struct {
			*TemplateData
			Caddy CaddyKnobs
		}{td, own}
	})
	if err != nil {
		return nil, err
	}
	l := td.launch(conf, []string{c.Support().Binary, "run", "--config", conf},
		[]string{c.Support().Binary, "validate", "--config", conf}, syscall.SIGINT) // Caddy's graceful stop
	l.Env = []string{"HOME=" + in.RunDir, "XDG_DATA_HOME=" + filepath.Join(in.RunDir, "data"), "XDG_CONFIG_HOME=" + filepath.Join(in.RunDir, "config")}
	if own.GOMAXPROCS > 0 {
		l.Env = append(l.Env, "GOMAXPROCS="+strconv.Itoa(own.GOMAXPROCS))
	}
	l.parseAccess = parseCaddyAccess
	l.Status = unixStatus(td.StatusSocket, "localhost", "/metrics", func(body []byte) (map[string]float64, error) {
		return ParsePrometheus(string(body), caddyMetrics)
	})
	l.Effective = effective(in.Server, map[string]int{"h2": 250, "h3": 100},
		map[string]any{"keep_alive": true, "push": "none", "gomaxprocs": own.GOMAXPROCS})
	return l, nil
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

// ParsePrometheus reads Prometheus text exposition with the Prometheus project's own parser
// (github.com/prometheus/common/expfmt) and returns the named metrics (renamed by keep; an empty
// new name drops it), each summed over its label sets: a counter's, gauge's or untyped metric's
// value, a summary's or histogram's count of observations. Text the parser refuses is an error
// naming the line; a named metric that is absent is simply not in the result.
func ParsePrometheus(text string, keep map[string]string) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("prometheus text: %w", err)
	}
	out := map[string]float64{}
	for name, fam := range families {
		as, ok := keep[name]
		if !ok || as == "" {
			continue
		}
		for _, m := range fam.GetMetric() {
			switch {
			case m.Counter != nil:
				out[as] += m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[as] += m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[as] += m.GetUntyped().GetValue()
			case m.Summary != nil:
				out[as] += float64(m.GetSummary().GetSampleCount())
			case m.Histogram != nil:
				out[as] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out, nil
}

var _ accessParser = parseCaddyAccess

// parseCaddyAccess reads a line of Caddy's structured log: the access logger's entries
// (http.log.access…) are requests, every other logger's line is not.
func parseCaddyAccess(b []byte, _ Ports, hosts map[string]int) (accessEntry, bool, error) {
	var c struct {
		Logger  string `json:"logger"`
		TS      num    `json:"ts"`
		Request struct {
			RemoteIP   string          `json:"remote_ip"`
			RemotePort string          `json:"remote_port"`
			Proto      string          `json:"proto"`
			Method     string          `json:"method"`
			Host       string          `json:"host"`
			URI        string          `json:"uri"`
			TLS        json.RawMessage `json:"tls"`
		} `json:"request"`
		Duration num   `json:"duration"`
		Size     int64 `json:"size"`
		Status   int   `json:"status"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return accessEntry{}, false, err
	}
	if !strings.HasPrefix(c.Logger, "http.log.access") {
		return accessEntry{}, false, nil
	}
	host := c.Request.Host
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	origin, ok := hosts[host]
	if !ok {
		origin = -1
	}
	return accessEntry{
		Start: float64(c.TS) - float64(c.Duration), Duration: float64(c.Duration), Proto: c.Request.Proto,
		TLS:    len(c.Request.TLS) > 0 && string(c.Request.TLS) != "null",
		Origin: origin, Remote: c.Request.RemoteIP + ":" + c.Request.RemotePort, Method: c.Request.Method,
		URI: c.Request.URI, Status: c.Status, Bytes: c.Size,
	}, true, nil
}
