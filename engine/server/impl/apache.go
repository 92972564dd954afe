package impl

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/spec"
)

// Apache is Apache httpd 2.4 from Debian's apache2 package: mpm_event, mpm_worker or
// mpm_prefork, mod_ssl, mod_http2 (h2, h2c), mod_status on a loopback port of the server
// namespace.
type Apache struct{}

var _ Server = Apache{}

// Name implements Server.
func (Apache) Name() string { return "apache" }

// Support implements Server.
func (Apache) Support() Support {
	return Support{
		Name:        "apache",
		Description: "Apache httpd (Debian's apache2 package, 2.4) with mod_ssl and mod_http2; MPM event, worker or prefork",
		Package:     "apache2",
		Binary:      "/usr/sbin/apache2",
		Protocols:   []string{"h1", "h1s", "h2", "h2c"},
		NotServed:   "no HTTP/3; mod_spdy is gone",
		Files:       true,
		Status:      "mod_status (server-status?auto): busy and idle workers, one count per scoreboard state; mod_http2's stream workers are not in it — count the threads",
		OwnKnobs:    "server.apache: mpm, start_servers, server_limit, threads_per_child, thread_limit, max_request_workers, min/max_spare_threads, min/max_spare_servers, max_connections_per_child, h2_min_workers, h2_max_workers",
		Knobs: []Knob{
			{Name: "max_concurrent_streams", How: "H2MaxSessionStreams (0: mod_http2's 100)"},
			cannot("apache", "write_chunk_bytes", "mod_http2 sizes its own DATA frames"),
			{Name: "tls_version", How: "SSLProtocol"},
			{Name: "session_resumption", How: "SSLSessionCache and SSLSessionTickets"},
			{Name: "keep_alive", How: "KeepAlive"},
			{Name: "push", How: "H2Push with a Link rel=preload per pushed object on the root (h2)"},
		},
	}
}

// Check implements Server.
func (a Apache) Check(s spec.Server, protocols []string) error {
	return checkCommon(a.Support(), s, protocols)
}

// Version implements Server.
func (a Apache) Version() string {
	return versionOf([]string{a.Support().Binary, "-v"}, afterPrefix("Server version: "))
}

// ApacheKnobs are Apache httpd's own settings: the spec's server.apache. 0 means the Debian
// package's default for the MPM (max_connections_per_child: 0 is unlimited, which is that default).
type ApacheKnobs struct {
	MPM                    string `json:"mpm"` // event | worker | prefork
	StartServers           int    `json:"start_servers"`
	ServerLimit            int    `json:"server_limit"`
	ThreadsPerChild        int    `json:"threads_per_child"`
	ThreadLimit            int    `json:"thread_limit"`
	MaxRequestWorkers      int    `json:"max_request_workers"`
	MinSpareThreads        int    `json:"min_spare_threads"`
	MaxSpareThreads        int    `json:"max_spare_threads"`
	MinSpareServers        int    `json:"min_spare_servers"`
	MaxSpareServers        int    `json:"max_spare_servers"`
	MaxConnectionsPerChild int    `json:"max_connections_per_child"`
	H2MinWorkers           int    `json:"h2_min_workers"`
	H2MaxWorkers           int    `json:"h2_max_workers"`
}

// NewKnobs implements OwnKnobs.
func (Apache) NewKnobs() any { return &ApacheKnobs{} }

// resolveApache replaces the 0s of the Apache table by the Debian package's defaults for the MPM
// (/etc/apache2/mods-available/mpm_*.conf) and Apache's own (ServerLimit, ThreadLimit), raised so
// that the settings are consistent (Apache would otherwise lower MaxRequestWorkers itself).
func resolveApache(k ApacheKnobs) ApacheKnobs {
	r := k
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&r.MaxRequestWorkers, 150)
	if r.MPM == "prefork" {
		def(&r.StartServers, 5)
		def(&r.MinSpareServers, 5)
		def(&r.MaxSpareServers, 10)
		def(&r.ServerLimit, max(256, r.MaxRequestWorkers))
		return r
	}
	def(&r.StartServers, 2)
	def(&r.ThreadsPerChild, 25)
	def(&r.ThreadLimit, max(64, r.ThreadsPerChild))
	def(&r.MinSpareThreads, 25)
	def(&r.MaxSpareThreads, 75)
	def(&r.ServerLimit, max(16, (r.MaxRequestWorkers+r.ThreadsPerChild-1)/r.ThreadsPerChild))
	return r
}

// Provision implements Server.
func (a Apache) Provision(in *Provision) (*Launch, error) {
	var own, resolved ApacheKnobs // resolved: no 0 left (the package's defaults for the MPM)
	td, conf, err := configure(in, "apache2", "apache.conf.tmpl", "apache2.conf", &own, func(td *TemplateData) any {
		resolved = resolveApache(own)
		return struct {
			*TemplateData
			Apache ApacheKnobs
		}{td, resolved}
	})
	if err != nil {
		return nil, err
	}
	status := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(td.StatusPort))
	l := td.launch(conf, []string{a.Support().Binary, "-f", conf, "-DFOREGROUND"}, []string{a.Support().Binary, "-t", "-f", conf},
		syscall.SIGWINCH) // graceful-stop: finish what is in flight
	l.Status = func(ctx context.Context, in *Instance) (map[string]float64, error) {
		var topo *netns.Topology
		if in != nil {
			topo = in.Topology()
		}
		body, err := tcpGetIn(ctx, topo, status, "localhost", "/server-status?auto")
		if err != nil {
			return nil, err
		}
		return ParseServerStatus(string(body))
	}
	l.Effective = effective(in.Server, cmp.Or(in.Server.MaxConcurrentStreams, 100), map[string]any{"apache": resolved})
	return l, nil
}

// scoreboardStates names the characters of mod_status's scoreboard.
var scoreboardStates = map[rune]string{
	'_': "waiting", 'S': "starting", 'R': "reading", 'W': "sending", 'K': "keepalive", 'D': "dns",
	'C': "closing", 'L': "logging", 'G': "finishing", 'I': "idle_cleanup", '.': "open_slot",
}

// ParseServerStatus reads mod_status's machine-readable page (server-status?auto): every numeric
// "Key: value" line (BusyWorkers → busy_workers, …) and one count per scoreboard state
// (scoreboard_waiting, scoreboard_sending, …).
func ParseServerStatus(text string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if key == "Scoreboard" {
			for _, state := range scoreboardStates {
				out["scoreboard_"+state] = 0
			}
			for _, c := range val {
				if name, ok := scoreboardStates[c]; ok {
					out["scoreboard_"+name]++
				}
			}
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[snake(key)] = v
		}
	}
	if _, ok := out["busy_workers"]; !ok {
		return nil, fmt.Errorf("server-status: no BusyWorkers in %q", text[:min(len(text), 120)])
	}
	return out, nil
}

// snake turns "BusyWorkers" into "busy_workers" and "ConnsAsyncWriting" into "conns_async_writing".
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r == ' ' || r == '-' {
			b.WriteByte('_')
			continue
		}
		if r >= 'A' && r <= 'Z' {
			if i > 0 && !(s[i-1] >= 'A' && s[i-1] <= 'Z') && s[i-1] != ' ' {
				b.WriteByte('_')
			}
			b.WriteRune(r + ('a' - 'A'))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
