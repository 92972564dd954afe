// Package impl is the contract every origin server implementation under test joins through:
// wirelab's built-in server and Apache httpd, nginx, h2o and Caddy from Debian's packages
// (docs/server.md, "Servers under test"). Each is one file here implementing Server and listed once
// in the registry (All); the trial, the load test and the docs take the implementations, what they
// serve and the knobs they honour from it.
//
// The life of a server in a run:
//
//	Check(server, protocols)  before anything exists: a protocol or knob it cannot serve or honour
//	                          is a *fielderr.Error naming server.impl (exit 2)
//	Provision(in) → *Launch   its configuration written into the run's private directory from
//	                          typed knobs and a template (or the user's template, server.config)
//	Start(…) → *Instance      the process inside the server namespace, in a control group of its own
//	(*Instance).Ready         its ready line (built-in) or a real request over every (origin,
//	                          protocol) the run uses, from inside the server namespace — never a sleep
//	(*Instance).Usage/Sample  CPU, memory, processes and threads of its whole tree; its own gauges
//	(*Instance).Stop          graceful (its own signal), then every process left in its group
package impl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/spec"
)

// Server is one implementation under test: one file here, listed once in All. Besides the
// methods, an implementation with a table of its own in the spec (server.<name>) implements
// OwnKnobs.
type Server interface {
	// Name is its server.impl value.
	Name() string
	// Support says what it serves and which knobs it honours, and how.
	Support() Support
	// Check refuses what it cannot do with this server object and these protocols, before
	// anything exists.
	Check(s spec.Server, protocols []string) error
	// Provision writes its configuration into in.Dir and says how to run it.
	Provision(in *Provision) (*Launch, error)
	// Version is the version installed here ("nginx/1.22.1"; "" when its binary is missing).
	Version() string
}

// OwnKnobs is implemented by an implementation with a table of its own in the spec
// (server.<name>, defined by the schema): its knobs, decoded by it alone.
type OwnKnobs interface {
	// NewKnobs returns a pointer to a new value of its table's type, for the table to be decoded
	// into.
	NewKnobs() any
}

// Support is what an implementation can do: the table of docs/server.md and `servers ls`.
type Support struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Package     string   `json:"package,omitempty"` // the Debian package it comes from ("" = wirelab's own)
	Binary      string   `json:"binary,omitempty"`
	Protocols   []string `json:"protocols"`        // what it serves, in the contract's order
	NotServed   string   `json:"not_served"`       // why the others are not
	Status      string   `json:"status,omitempty"` // its own gauges (mod_status, stub_status, …)
	// Files says that it serves files from a document root (DocRoot), so a Tree is made per load
	// and it runs as an unprivileged user; false for the built-in server, which generates every
	// response.
	Files bool `json:"-"`
	// QUICLosses says that it reports what its QUIC stack declared lost on each h3 connection
	// (Provision.QUICStats): the built-in server.
	QUICLosses bool   `json:"-"`
	Knobs      []Knob `json:"knobs"`               // how each common knob is honoured
	OwnKnobs   string `json:"own_knobs,omitempty"` // its table in the spec (server.apache …)
}

// Knob says how an implementation honours one of the common server knobs.
type Knob struct {
	Name string `json:"name"` // max_concurrent_streams, write_chunk_bytes, tls_version, session_resumption, keep_alive, push
	// How it is set ("H2MaxSessionStreams"); "" when the implementation cannot set it.
	How string `json:"how"`
	// Accepts are the values accepted when it cannot be set: the one that stands for its own
	// behaviour, which is also the knob's default with this implementation (the schema's
	// "x-cannot-set" on its table), e.g. ["0"].
	Accepts []string `json:"accepts,omitempty"`
	// Own describes the implementation's own behaviour (its default).
	Own string `json:"own,omitempty"`
}

// Provision is what an implementation's configuration is made from.
type Provision struct {
	Dir       string       // the server's private directory (0700; the lab's); its config goes here
	RunDir    string       // a directory the server's unprivileged workers may write (pid files, sockets)
	DocRoot   string       // <DocRoot>/s<N>/L/<token>/… holds each load's files (Tree)
	Page      *page.Page   // the page as served (seeded, sharded)
	PageArg   string       // the page as `serve --page` takes it
	Seed      int64        // the page's seed
	Shards    int          // the spec's shards and shard_mode (serve shards the page itself)
	ShardMode string       //
	Origins   []netip.Addr // one address per origin (s1, s2, …)
	Protocols []string     // what the run loads over
	Server    spec.Server  // the spec's server object (its own table decoded by the implementation)
	CertDir   string       // ca.pem, cert.pem, key.pem (key 0600)
	Engine    string       // the wirelab-engine binary (the built-in server runs as `serve`)
	Env       []string     // the environment of wirelab-engine children (the built-in server's)
	Ports     Ports
	// RecordsFile and ConnsFile are where the request and connection records go (the trial's
	// server/requests.jsonl and server/conns.jsonl); "" = none.
	RecordsFile, ConnsFile string
	QUICStats              bool // the built-in server reports each h3 connection's losses
	// AnnounceH3 asks the server to announce its h3 service in an Alt-Svc header field of every
	// response (client.h3 = alt-svc): the built-in server sends AltSvcH3(Ports); Caddy announces
	// h3 by itself whenever it serves it. Servers that do not serve h3 have nothing to announce.
	AnnounceH3 bool
}

// AltSvcH3 is the Alt-Svc field value by which a lab server announces h3 on ports.QUIC (RFC
// 7838; ma = one day, as Caddy and most CDNs send: a repeat view finds it still fresh).
func AltSvcH3(p Ports) string { return fmt.Sprintf(`h3=":%d"; ma=86400`, p.QUIC) }

// Ports are the listening ports (the same on every origin address).
type Ports struct{ HTTP, HTTPS, QUIC int }

// DefaultPorts are the standard ports: the URLs carry no port.
var DefaultPorts = Ports{HTTP: 80, HTTPS: 443, QUIC: 443}

// ReadyBy is how a launched server says it is ready.
type ReadyBy int

// Ways to be ready.
const (
	ReadyLine  ReadyBy = iota // its first stdout line is {"event":"ready",…} (the built-in server)
	ReadyProbe                // a real request over every (origin, protocol) answers 200 with the right bytes
)

// Launch is how to run a provisioned server.
type Launch struct {
	Argv []string
	// Env is added to a minimal environment (PATH): the built-in server's is the engine's children's
	// (Provision.Env), a real server's its own settings.
	Env []string
	// Test checks the configuration without serving (nginx -t, apache2 -t, h2o -t, caddy
	// validate); nil when there is nothing to check. It runs where the configuration's files are,
	// in any namespace.
	Test  []string
	Ready ReadyBy
	// StopSignal asks for a graceful stop (nginx SIGQUIT, Apache SIGWINCH graceful-stop, …).
	StopSignal syscall.Signal
	// Index is the root document's file name below /L/<token>/ (the directory index).
	Index string
	// Status reads the implementation's own gauges; nil when it has none.
	Status func(ctx context.Context, in *Instance) (map[string]float64, error)
	// AccessLog is the file the server logs requests to ("" = none), each line in the format
	// parseAccess reads (ConvertAccessLog).
	AccessLog   string
	parseAccess accessParser
	// Effective are the values of the common knobs the server runs with (its own defaults
	// resolved), recorded in trial.json.
	Effective map[string]any
	// Config is the configuration file written ("" for the built-in server).
	Config string
}

// All lists every implementation, in the order of the contract's enum.
var All = []Server{Builtin{}, Apache{}, Nginx{}, H2O{}, Caddy{}}

// Lookup returns the implementation named by server.impl.
func Lookup(name string) (Server, error) {
	for _, s := range All {
		if s.Name() == name {
			return s, nil
		}
	}
	names := make([]string, len(All))
	for i, s := range All {
		names[i] = s.Name()
	}
	return nil, fielderr.New("server.impl", name, "must be %s", strings.Join(names, ", "))
}

// checkCommon refuses a protocol the implementation does not serve and a common knob it cannot
// honour: the one rule every implementation applies, from its Support table.
func checkCommon(sup Support, s spec.Server, protocols []string) error {
	for i, p := range protocols {
		if !slices.Contains(sup.Protocols, p) {
			return fielderr.New(fmt.Sprintf("protocols[%d]", i), p, "not served by server.impl %s, which serves %s (%s)",
				sup.Name, strings.Join(sup.Protocols, ", "), sup.NotServed)
		}
	}
	values := commonValues(s)
	for _, kn := range sup.Knobs {
		v := values[kn.Name]
		if kn.How != "" || slices.Contains(kn.Accepts, v) {
			continue
		}
		own := ""
		if kn.Own != "" {
			own = " (" + kn.Own + ")"
		}
		return fielderr.New("server."+kn.Name, v, "server.impl %s cannot set it%s; use %s", sup.Name, own, orList(kn.Accepts))
	}
	if s.Config != "" {
		if err := checkUserConfig(sup, s); err != nil {
			return err
		}
	}
	return nil
}

// commonKnobs are the common server knobs, in the contract's order.
var commonKnobs = []string{"max_concurrent_streams", "write_chunk_bytes", "tls_version", "session_resumption", "keep_alive", "push"}

// commonValues are the common knobs' values as their refusals show them.
func commonValues(s spec.Server) map[string]string {
	return map[string]string{
		"max_concurrent_streams": fmt.Sprint(s.MaxConcurrentStreams),
		"write_chunk_bytes":      fmt.Sprint(s.WriteChunkBytes),
		"tls_version":            s.TLSVersion,
		"session_resumption":     fmt.Sprint(s.SessionResumption),
		"keep_alive":             fmt.Sprint(s.KeepAlive),
		"push":                   s.Push,
	}
}

// checkUserConfig: with the user's own configuration wirelab applies none of its knobs, so they
// must stay at their defaults for the implementation (the configuration is then the whole truth).
func checkUserConfig(sup Support, s spec.Server) error {
	if !sup.Files {
		return fielderr.New("server.config", s.Config, "the built-in server has no configuration file; server.config is for apache, nginx, h2o and caddy")
	}
	got, def := commonValues(s), commonValues(spec.DefaultServer(sup.Name))
	for _, name := range commonKnobs {
		if got[name] != def[name] {
			return fielderr.New("server."+name, got[name], "with server.config your configuration sets it; leave server.%s at its default (%s)", name, def[name])
		}
	}
	return nil
}

// cannot describes a common knob implementation impl cannot set: own says what it does instead.
// The one value it accepts, standing for that behaviour, is the schema's (spec.CannotSet).
func cannot(impl, knob, own string) Knob {
	return Knob{Name: knob, Accepts: []string{fmt.Sprint(spec.CannotSet(impl)[knob])}, Own: own}
}

// decodeOwn decodes the implementation's own table (server.<name>) into dst strictly: the spec's,
// or the schema's defaults for a server object made without one.
func decodeOwn(s spec.Server, dst any) error {
	raw := s.Own
	if raw == nil {
		raw = spec.DefaultServer(s.Impl).Own
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("server.%s: the schema and the engine's knobs disagree: %w", s.Impl, err)
	}
	return nil
}

// Canonical decodes the implementation's own table of s and writes it back in the form the
// implementation reads it (its fields in its order): the form a run records.
func Canonical(s *spec.Server) error {
	srv, err := Lookup(s.Impl)
	if err != nil {
		return err
	}
	own, ok := srv.(OwnKnobs)
	if !ok {
		return nil
	}
	k := own.NewKnobs()
	if err := decodeOwn(*s, k); err != nil {
		return err
	}
	b, err := json.Marshal(k)
	if err != nil {
		return err
	}
	s.Own = b
	return nil
}

func orList(items []string) string {
	switch len(items) {
	case 0:
		return "its own"
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// versionOf runs an implementation's version command and returns the version its output names,
// as parse reads a line ("nginx/1.22.1"); "" when the binary is missing or names none.
func versionOf(argv []string, parse func(line string) (string, bool)) string {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := parse(strings.TrimSpace(line)); ok {
			return v
		}
	}
	return ""
}

// afterPrefix is a versionOf parser: what follows prefix on a line.
func afterPrefix(prefix string) func(string) (string, bool) {
	return func(line string) (string, bool) {
		v, ok := strings.CutPrefix(line, prefix)
		return strings.TrimSpace(v), ok
	}
}

// Names lists the implementations' names, sorted as registered.
func Names() []string {
	out := make([]string, len(All))
	for i, s := range All {
		out[i] = s.Name()
	}
	return out
}

// sortedTypes returns the page's file extensions and their content types (the first object
// with an extension decides), for servers that take a Content-Type from the file name.
func sortedTypes(pg *page.Page) []MIMEType {
	seen := map[string]string{}
	for _, o := range pg.Objects {
		ext := extension(o.Path)
		if ext == "" {
			continue
		}
		if _, ok := seen[ext]; !ok {
			seen[ext] = o.ContentType
		}
	}
	out := make([]MIMEType, 0, len(seen))
	for ext, ct := range seen {
		out = append(out, MIMEType{Ext: ext, ContentType: ct})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ext < out[j].Ext })
	return out
}

// MIMEType maps a file extension to a Content-Type.
type MIMEType struct{ Ext, ContentType string }

func extension(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return base[i+1:]
	}
	return ""
}
