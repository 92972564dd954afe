package impl

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/wirelab/wirelab/engine/spec"
)

// Nginx is nginx 1.22 from Debian's package: the master and its workers (worker_processes), one
// server block per origin, stub_status on a unix socket.
type Nginx struct{}

var _ Server = Nginx{}

// Name implements Server.
func (Nginx) Name() string { return "nginx" }

// Support implements Server.
func (Nginx) Support() Support {
	return Support{
		Name:        "nginx",
		Description: "nginx (Debian's nginx package, 1.22): event-driven master and workers",
		Package:     "nginx",
		Binary:      "/usr/sbin/nginx",
		Protocols:   []string{"h1", "h1s", "h2"},
		NotServed:   "1.22 speaks h2c only on a port without HTTP/1.1 and has no HTTP/3; no SPDY",
		Files:       true,
		Status:      "stub_status: active, reading, writing, waiting connections; accepts, handled, requests",
		OwnKnobs:    "server.nginx: worker_processes, worker_connections, keepalive_requests, keepalive_timeout_s, open_file_cache, reuseport",
		Knobs: []Knob{
			{Name: "max_concurrent_streams", How: "http2_max_concurrent_streams (0: nginx's 128)"},
			cannot("nginx", "write_chunk_bytes", "nginx writes bodies with sendfile; its http2_chunk_size (8k) applies to HTTP/2 only"),
			{Name: "tls_version", How: "ssl_protocols"},
			{Name: "session_resumption", How: "ssl_session_cache and ssl_session_tickets"},
			{Name: "keep_alive", How: "keepalive_timeout 0 when off"},
			{Name: "push", How: "http2_push of the policy's objects on the root (h2)"},
		},
	}
}

// Check implements Server.
func (n Nginx) Check(s spec.Server, protocols []string) error {
	return checkCommon(n.Support(), s, protocols)
}

// Version implements Server.
func (n Nginx) Version() string {
	return versionOf([]string{n.Support().Binary, "-v"}, afterPrefix("nginx version: "))
}

// NginxKnobs are nginx's own settings: the spec's server.nginx.
type NginxKnobs struct {
	WorkerProcesses   int  `json:"worker_processes"` // 0 = auto
	WorkerConnections int  `json:"worker_connections"`
	KeepaliveRequests int  `json:"keepalive_requests"`
	KeepaliveTimeoutS int  `json:"keepalive_timeout_s"` // with keep_alive on
	OpenFileCache     int  `json:"open_file_cache"`     // open_file_cache max=N; 0 = off
	Reuseport         bool `json:"reuseport"`           // listen … reuseport: one listening socket per worker
}

// NewKnobs implements OwnKnobs.
func (Nginx) NewKnobs() any { return &NginxKnobs{} }

// Provision implements Server.
func (n Nginx) Provision(in *Provision) (*Launch, error) {
	var own NginxKnobs
	td, conf, err := configure(in, "nginx", "nginx.conf.tmpl", "nginx.conf", &own, func(td *TemplateData) any {
		return struct {
			*TemplateData
			Nginx NginxKnobs
		}{td, own}
	})
	if err != nil {
		return nil, err
	}
	l := td.launch(conf, []string{n.Support().Binary, "-c", conf, "-p", in.Dir, "-e", td.ErrorLog},
		[]string{n.Support().Binary, "-t", "-q", "-c", conf, "-p", in.Dir},
		syscall.SIGQUIT) // graceful: finish what is in flight, then exit
	l.Status = unixStatus(td.StatusSocket, "localhost", "/status", func(body []byte) (map[string]float64, error) {
		return ParseStubStatus(string(body))
	})
	l.Effective = effective(in.Server, cmp.Or(in.Server.MaxConcurrentStreams, 128), map[string]any{
		"worker_processes": own.WorkerProcesses, "worker_connections": own.WorkerConnections,
		"keepalive_requests": own.KeepaliveRequests, "keepalive_timeout_s": own.KeepaliveTimeoutS,
		"open_file_cache": own.OpenFileCache, "reuseport": own.Reuseport})
	return l, nil
}

// ParseStubStatus reads nginx's stub_status page:
//
//	Active connections: 2
//	server accepts handled requests
//	 10 10 31
//	Reading: 0 Writing: 1 Waiting: 1
func ParseStubStatus(text string) (map[string]float64, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 4 {
		return nil, fmt.Errorf("stub_status: %d lines", len(lines))
	}
	out := map[string]float64{}
	f := strings.Fields(lines[0])
	if len(f) != 3 {
		return nil, fmt.Errorf("stub_status: %q", lines[0])
	}
	var err error
	if out["active"], err = strconv.ParseFloat(f[2], 64); err != nil {
		return nil, fmt.Errorf("stub_status: %q", lines[0])
	}
	counts := strings.Fields(lines[2])
	if len(counts) != 3 {
		return nil, fmt.Errorf("stub_status: %q", lines[2])
	}
	for i, name := range []string{"accepts", "handled", "requests"} {
		if out[name], err = strconv.ParseFloat(counts[i], 64); err != nil {
			return nil, fmt.Errorf("stub_status: %q", lines[2])
		}
	}
	rw := strings.Fields(lines[3])
	if len(rw) != 6 {
		return nil, fmt.Errorf("stub_status: %q", lines[3])
	}
	for i := 0; i < 6; i += 2 {
		v, err := strconv.ParseFloat(rw[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("stub_status: %q", lines[3])
		}
		out[strings.ToLower(strings.TrimSuffix(rw[i], ":"))] = v
	}
	return out, nil
}
