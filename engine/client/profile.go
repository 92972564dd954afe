package client

import (
	"crypto/tls"
	"sync"
)

// A Profile is what a browser profile keeps from one load to the next, for what the loader
// models of a repeat view (docs/vitals.md, "Views"): the TLS session tickets of TCP connections
// and of QUIC connections (kept apart, as Chromium keeps them), and the origins known to serve
// h3 (Alt-Svc cache; HTTPS records are not cached: the lab's DNS answers with TTL 0), and the HTTP
// cache (httpCache: what it models and what not). Loads share a Profile through
// Config.Profile; nil gives each load a fresh one (every handshake full, nothing announced). A
// Profile is safe for concurrent use.
type Profile struct {
	tcp, quic tls.ClientSessionCache

	mu     sync.Mutex
	altSvc map[origin]string // the port an Alt-Svc field of the origin announced h3 on (its own host)

	http *httpCache // nil in a load's own profile: no cache
}

// NewProfile returns an empty profile.
func NewProfile() *Profile {
	return &Profile{tcp: tls.NewLRUClientSessionCache(0), quic: tls.NewLRUClientSessionCache(0),
		altSvc: map[origin]string{}, http: newHTTPCache()}
}

// fresh is a load's own profile without session caches (Config.Profile nil): Alt-Svc still
// switches the origin within the load.
func freshProfile() *Profile {
	return &Profile{altSvc: map[origin]string{}}
}

func (p *Profile) announce(o origin, port string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.altSvc[o] = port
}

func (p *Profile) announced(o origin) (port string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	port, ok = p.altSvc[o]
	return port, ok
}
