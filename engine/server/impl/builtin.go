package impl

import (
	"slices"
	"syscall"

	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/internal/version"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/spec"
)

// Builtin is wirelab's own origin server (engine/server, `wirelab-engine serve`): x/net/http2,
// quic-go, net/http and engine/spdy. It generates every response, so it needs no files.
type Builtin struct{}

var _ Server = Builtin{}

// Name implements Server.
func (Builtin) Name() string { return "builtin" }

// Support implements Server.
func (Builtin) Support() Support {
	all := func(name, how string) Knob { return Knob{Name: name, How: how} }
	return Support{
		Name:        "builtin",
		Description: "wirelab's own server: net/http (h1, h1s), x/net/http2 (h2, h2c), quic-go (h3), engine/spdy (spdy3)",
		Protocols:   []string{"h1", "h1s", "h2", "h2c", "h3", "spdy3"},
		NotServed:   "it serves every protocol of the contract",
		Status:      "none (its process tree's CPU, memory and threads)",
		QUICLosses:  true,
		Knobs: []Knob{
			all("max_concurrent_streams", "SETTINGS_MAX_CONCURRENT_STREAMS, QUIC max streams (0: 100)"),
			all("write_chunk_bytes", "body writes and DATA frames of at most N bytes"),
			all("tls_version", "the only TLS version accepted"),
			all("session_resumption", "session tickets and QUIC 0-RTT on or off"),
			all("keep_alive", "Connection: close after each response when off"),
			all("push", "every policy (docs/push-priority.md)"),
		},
	}
}

// Check implements Server.
func (b Builtin) Check(s spec.Server, protocols []string) error {
	return checkCommon(b.Support(), s, protocols)
}

// Version implements Server: the engine's own.
func (Builtin) Version() string { return version.Version }

// Provision implements Server: `wirelab-engine serve` with the knobs as flags, serving the run's
// certificates, printing a ready line once every listener is up.
func (Builtin) Provision(in *Provision) (*Launch, error) {
	k := in.Server
	mcs := k.MaxConcurrentStreams
	if mcs == 0 {
		mcs = server.DefaultConfig().MaxConcurrentStreams
	}
	addrs := make([]string, len(in.Origins))
	for i, a := range in.Origins {
		addrs[i] = a.String()
	}
	sv := seam.DefaultServe()
	sv.Page, sv.Seed, sv.Shards, sv.ShardMode = in.PageArg, in.Seed, in.Shards, in.ShardMode
	sv.Addrs, sv.Protocols = addrs, in.Protocols
	sv.PortHTTP, sv.PortHTTPS, sv.PortQUIC = in.Ports.HTTP, in.Ports.HTTPS, in.Ports.QUIC
	sv.MaxConcurrentStreams, sv.WriteChunkBytes, sv.TLSVersion = mcs, k.WriteChunkBytes, k.TLSVersion
	sv.SessionResumption, sv.KeepAlive, sv.Push = k.SessionResumption, k.KeepAlive, k.Push
	sv.Certs, sv.Records, sv.Conns, sv.QUICStats = in.CertDir, in.RecordsFile, in.ConnsFile, in.QUICStats
	if in.AnnounceH3 && slices.Contains(in.Protocols, "h3") {
		sv.AltSvc = AltSvcH3(in.Ports)
	}
	argv := append([]string{in.Engine}, sv.Args()...)
	return &Launch{
		Argv: argv, Env: in.Env, Ready: ReadyLine, StopSignal: syscall.SIGTERM,
		Effective: map[string]any{"max_concurrent_streams": mcs, "write_chunk_bytes": k.WriteChunkBytes, "tls_version": k.TLSVersion,
			"session_resumption": k.SessionResumption, "keep_alive": k.KeepAlive, "push": k.Push},
	}, nil
}
