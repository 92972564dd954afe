package impl

import (
	"cmp"
	"encoding/json"
	"syscall"

	"github.com/wirelab/wirelab/engine/spec"
)

// H2O is h2o 2.2 from Debian's package: one process, num-threads event loops, its status handler
// on a unix socket.
type H2O struct{}

var _ Server = H2O{}

// Name implements Server.
func (H2O) Name() string { return "h2o" }

// Support implements Server.
func (H2O) Support() Support {
	return Support{
		Name:        "h2o",
		Description: "h2o (Debian's h2o package, 2.2): one process, an event loop per thread",
		Package:     "h2o",
		Binary:      "/usr/bin/h2o",
		Protocols:   []string{"h1", "h1s", "h2", "h2c"},
		NotServed:   "2.2 has no HTTP/3 (h2o added QUIC in 2.3); no SPDY",
		Files:       true,
		Status:      "its status handler (JSON): connections, worker threads, requests in flight",
		OwnKnobs:    "server.h2o: num_threads",
		Knobs: []Knob{
			{Name: "max_concurrent_streams", How: "http2-max-concurrent-requests-per-connection (0: h2o's 100)"},
			cannot("h2o", "write_chunk_bytes", "h2o sizes its own writes and DATA frames"),
			{Name: "tls_version", How: "minimum-version and max-version"},
			{Name: "session_resumption", How: "ssl-session-resumption mode all or off"},
			cannot("h2o", "keep_alive", "h2o 2.2 always keeps HTTP/1.1 connections alive"),
			cannot("h2o", "push", "h2o pushes only what Link headers name, and 2.2 cannot put a load's token into one"),
		},
	}
}

// Check implements Server.
func (h H2O) Check(s spec.Server, protocols []string) error {
	return checkCommon(h.Support(), s, protocols)
}

// Version implements Server.
func (h H2O) Version() string {
	return versionOf([]string{h.Support().Binary, "--version"}, afterPrefix("h2o version "))
}

// H2OKnobs are h2o's own settings: the spec's server.h2o.
type H2OKnobs struct {
	NumThreads int `json:"num_threads"` // 0 = one per CPU
}

// NewKnobs implements OwnKnobs.
func (H2O) NewKnobs() any { return &H2OKnobs{} }

// Provision implements Server.
func (h H2O) Provision(in *Provision) (*Launch, error) {
	var own H2OKnobs
	td, conf, err := configure(in, "h2o", "h2o.conf.tmpl", "h2o.conf", &own, func(td *TemplateData) any {
		return struct {
			*TemplateData
			H2O H2OKnobs
		}{td, own}
	})
	if err != nil {
		return nil, err
	}
	threads := cmp.Or(own.NumThreads, td.CPUs)
	l := td.launch(conf, []string{h.Support().Binary, "-c", conf}, []string{h.Support().Binary, "-t", "-c", conf},
		syscall.SIGTERM) // h2o's graceful shutdown
	l.Status = unixStatus(td.StatusSocket, "status", "/status/json", ParseH2OStatus)
	l.Effective = effective(in.Server, cmp.Or(in.Server.MaxConcurrentStreams, 100),
		map[string]any{"keep_alive": true, "push": "none", "num_threads": threads})
	return l, nil
}

// ParseH2OStatus reads h2o's status JSON: connections, max connections, worker threads, and the
// requests in flight (its "requests" list, the status request itself excluded).
func ParseH2OStatus(body []byte) (map[string]float64, error) {
	var st struct {
		Connections    float64           `json:"connections"`
		MaxConnections float64           `json:"max-connections"`
		WorkerThreads  float64           `json:"worker-threads"`
		NumSessions    float64           `json:"num-sessions"`
		Requests       []json.RawMessage `json:"requests"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, err
	}
	return map[string]float64{
		"connections": st.Connections, "max_connections": st.MaxConnections, "worker_threads": st.WorkerThreads,
		"sessions": st.NumSessions, "requests_in_flight": float64(max(len(st.Requests)-1, 0)),
	}, nil
}
