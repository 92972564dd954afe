// Package impl is the contract every origin server implementation under test joins through:
// wirelab's built-in server and Apache httpd, nginx, h2o and Caddy from Debian's packages
// (docs/server.md, "Servers under test"). Each is one file here implementing Server and listed once
// in the registry (All); the trial, the load test and the docs take the implementations, what they
// serve and the knobs they honour from it.
//
// The life of a server in a run:
//
//	Check(knobs, protocols)   before anything exists: a protocol or knob it cannot serve or honour
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
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/page"
)

// Server is one implementation under test.
type Server interface {
	// Name is its server.impl value.
	Name() string
	// Support says what it serves and which knobs it honours, and how.
	Support() Support
	// Check refuses what it cannot do with these knobs and protocols, before anything exists.
	Check(k Knobs, protocols []string) error
	// Provision writes its configuration into in.Dir and says how to run it.
	Provision(in *Provision) (*Launch, error)
}

// Support is what an implementation can do: the table of docs/server.md and `servers ls`.
type Support struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Package     string   `json:"package,omitempty"` // the Debian package it comes from ("" = wirelab's own)
	Binary      string   `json:"binary,omitempty"`
	Protocols   []string `json:"protocols"`           // what it serves, in the contract's order
	NotServed   string   `json:"not_served"`          // why the others are not
	Status      string   `json:"status,omitempty"`    // its own gauges (mod_status, stub_status, …)
	Knobs       []Knob   `json:"knobs"`               // how each common knob is honoured
	OwnKnobs    string   `json:"own_knobs,omitempty"` // its table in the spec (server.apache …)
}

// Knob says how an implementation honours one of the common server knobs.
type Knob struct {
	Name string `json:"name"` // max_concurrent_streams, write_chunk_bytes, tls_version, session_resumption, keep_alive, push
	// How it is set ("H2MaxSessionStreams"); "" when the implementation cannot set it.
	How string `json:"how"`
	// Accepts are the values accepted when it cannot be set (its own behaviour), e.g. ["0"].
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
	Knobs     Knobs        // the spec's server object
	CertDir   string       // ca.pem, cert.pem, key.pem (key 0600)
	Engine    string       // the wirelab-engine binary (the built-in server runs as `serve`)
	Ports     Ports
	// RecordsFile and ConnsFile are where the request and connection records go (the trial's
	// server/requests.jsonl and server/conns.jsonl); "" = none.
	RecordsFile, ConnsFile string
	QUICStats              bool // the built-in server reports each h3 connection's losses
}

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
	Env  []string // added to a minimal environment
	// Test checks the configuration without serving (nginx -t, apache2 -t, h2o -t, caddy
	// validate); nil when there is nothing to check. It runs where the configuration's files are,
	// in any namespace.
	Test  []string
	Ready ReadyBy
	// StopSignal asks for a graceful stop (nginx SIGQUIT, Apache SIGWINCH graceful-stop, …).
	StopSignal syscall.Signal
	// Files lists what the server serves from DocRoot: a Tree must be made per load. False for
	// the built-in server, which generates every response.
	Files bool
	// Index is the root document's file name below /L/<token>/ (the directory index).
	Index string
	// Status reads the implementation's own gauges; nil when it has none.
	Status func(ctx context.Context, in *Instance) (map[string]float64, error)
	// AccessLog is the file the server logs requests to, in the format Records reads; "" = none.
	AccessLog string
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
func checkCommon(sup Support, k Knobs, protocols []string) error {
	for i, p := range protocols {
		if !slices.Contains(sup.Protocols, p) {
			return fielderr.New(fmt.Sprintf("protocols[%d]", i), p, "not served by server.impl %s, which serves %s (%s)",
				sup.Name, strings.Join(sup.Protocols, ", "), sup.NotServed)
		}
	}
	values := map[string]string{
		"max_concurrent_streams": fmt.Sprint(k.MaxConcurrentStreams),
		"write_chunk_bytes":      fmt.Sprint(k.WriteChunkBytes),
		"tls_version":            k.TLSVersion,
		"session_resumption":     fmt.Sprint(k.SessionResumption),
		"keep_alive":             fmt.Sprint(k.KeepAlive),
		"push":                   k.Push,
	}
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
	if k.Config != "" {
		if err := checkUserConfig(sup, k); err != nil {
			return err
		}
	}
	return nil
}

// checkUserConfig: with the user's own configuration wirelab applies none of its knobs, so they
// must stay at the contract's defaults (the configuration is then the whole truth).
func checkUserConfig(sup Support, k Knobs) error {
	if sup.Name == "builtin" {
		return fielderr.New("server.config", k.Config, "the built-in server has no configuration file; server.config is for apache, nginx, h2o and caddy")
	}
	d := defaultKnobs()
	for _, c := range []struct {
		name     string
		got, def any
	}{
		{"max_concurrent_streams", k.MaxConcurrentStreams, d.MaxConcurrentStreams},
		{"write_chunk_bytes", k.WriteChunkBytes, d.WriteChunkBytes},
		{"tls_version", k.TLSVersion, d.TLSVersion},
		{"session_resumption", k.SessionResumption, d.SessionResumption},
		{"keep_alive", k.KeepAlive, d.KeepAlive},
		{"push", k.Push, d.Push},
	} {
		if c.got != c.def {
			return fielderr.New("server."+c.name, fmt.Sprint(c.got), "with server.config your configuration sets it; leave server.%s at its default (%v)", c.name, c.def)
		}
	}
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

// Version runs the implementation's version command and returns its first line that names a
// version ("nginx/1.22.1"); "" when the binary is missing.
func Version(s Server) string {
	sup := s.Support()
	var argv []string
	switch sup.Name {
	case "apache":
		argv = []string{sup.Binary, "-v"}
	case "nginx":
		argv = []string{sup.Binary, "-v"}
	case "h2o":
		argv = []string{sup.Binary, "--version"}
	case "caddy":
		argv = []string{sup.Binary, "version"}
	default:
		return ""
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		for _, prefix := range []string{"Server version: ", "nginx version: ", "h2o version "} {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				return strings.TrimSpace(v)
			}
		}
		if sup.Name == "caddy" && line != "" {
			return "caddy/" + strings.Fields(line)[0]
		}
	}
	return ""
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
