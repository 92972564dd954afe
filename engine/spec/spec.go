// Package spec is what a trial spec and a load test's spec share, declared once: the lab's fields
// (Lab: the page, how it is sharded, the network, the server under test) and the one strict
// decoding of a spec against its schema in engine/contract (Object, Defaults, Into).
//
// The server object's implementation tables (server.apache, server.nginx, …: the schema's
// properties marked "x-impl") are not this package's: of them only the chosen implementation's is
// kept, filled with its defaults, as raw JSON (Server.Own), and that implementation
// (engine/server/impl) decodes it, as a Caddy module decodes its own part of Caddy's configuration.
// A common knob an implementation cannot set defaults to the value that stands for its own
// behaviour (the table's "x-cannot-set"), so every implementation runs with the defaults.
//
// The package depends on the contract alone: a load generator decodes its spec without the lab.
package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/wirelab/wirelab/engine/contract"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

// Lab holds the fields a trial spec and a load test's spec share: what the lab serves and how it
// is reached. What each means, its range and its default are the trial spec's schema's
// (engine/contract/schemas/trial-spec.schema.json; the load test's schema refers to them).
type Lab struct {
	Page      string `json:"page"`
	Shards    int    `json:"shards"`
	ShardMode string `json:"shard_mode"`
	Network   string `json:"network"` // the profile string as written
	Server    Server `json:"server"`
}

// Fields are the JSON names of Lab's fields, in its order.
var Fields = []string{"page", "shards", "shard_mode", "network", "server"}

// Server is the spec's "server" object: the implementation under test, the common knobs every
// implementation honours or refuses (impl.Support says how), and the chosen implementation's own
// table.
type Server struct {
	Impl                 string `json:"impl"`                   // builtin | apache | nginx | h2o | caddy
	MaxConcurrentStreams int    `json:"max_concurrent_streams"` // 1–1000; 0 = the implementation's own
	WriteChunkBytes      int    `json:"write_chunk_bytes"`      // 0 (the implementation's own) or 256–1048576
	TLSVersion           string `json:"tls_version"`            // 1.2 | 1.3
	SessionResumption    bool   `json:"session_resumption"`
	KeepAlive            bool   `json:"keep_alive"`
	Push                 string `json:"push"`             // none | all | embedding-level | dependency-level:N
	Config               string `json:"config,omitempty"` // the user's configuration template; "" = generated
	// Own is the chosen implementation's own table (server.<Impl>) with its defaults filled, as
	// JSON, for the implementation to decode; nil when it has none. It is marshalled under the
	// implementation's name.
	Own json.RawMessage `json:"-"`
}

// server is Server's JSON form without the implementation's table.
type server Server

// MarshalJSON writes the common fields, then the implementation's table under its name.
func (s Server) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(server(s))
	if err != nil || s.Own == nil {
		return b, err
	}
	name, err := json.Marshal(s.Impl)
	if err != nil {
		return nil, err
	}
	var own bytes.Buffer
	if err := json.Compact(&own, s.Own); err != nil {
		return nil, fmt.Errorf("server.%s: %w", s.Impl, err)
	}
	out := append(b[:len(b)-1], ',')
	out = append(append(append(out, name...), ':'), own.Bytes()...)
	return append(out, '}'), nil
}

// UnmarshalJSON reads the common fields strictly and keeps the table named by impl, raw; a table
// of another implementation is an unknown field.
func (s *Server) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	var impl string
	if raw, ok := fields["impl"]; ok {
		if err := json.Unmarshal(raw, &impl); err != nil {
			return err
		}
	}
	own := fields[impl]
	delete(fields, impl)
	rest, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	var c server
	if err := dec.Decode(&c); err != nil {
		return err
	}
	*s = Server(c)
	s.Own = own
	return nil
}

// Object parses data as one JSON object (numbers kept exact) and validates it against the named
// schema of engine/contract: the first problem is a *fielderr.Error naming the dotted path.
func Object(schema string, data []byte) (map[string]any, error) {
	v, err := contract.Decode("spec", data)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &fielderr.Error{Field: "spec", Value: contract.Show(v), Allowed: "must be a JSON object"}
	}
	if err := contract.Validate(schema, m); err != nil {
		return nil, err
	}
	return m, nil
}

// Defaults fills the absent fields of a validated spec object: the server object's first
// (SelectServer), then every "default" of the named schema.
func Defaults(schema string, m map[string]any) error {
	srv, _ := m["server"].(map[string]any)
	if srv == nil {
		srv = map[string]any{}
		m["server"] = srv
	}
	if err := SelectServer(srv); err != nil {
		return err
	}
	return contract.ApplyDefaults(schema, m)
}

// Into decodes a filled spec object into dst (a pointer) strictly: a field dst lacks means the
// schema accepted what the engine's struct does not have — a bug named by what, not bad input.
func Into(m map[string]any, dst any, what string) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%s: the schema and the engine's struct disagree: %w", what, err)
	}
	return nil
}

// SelectServer completes a server object (as JSON values) for its implementation: of the
// implementation tables (the schema's properties marked "x-impl", each named as its
// implementation) it keeps server.impl's — created empty when absent, so that the schema's
// defaults fill it — and drops the others (a table configures its implementation only when that
// one runs); a common knob that implementation cannot set and the object leaves out gets the
// value standing for the implementation's own behaviour (the table's "x-cannot-set").
func SelectServer(srv map[string]any) error {
	chosen, _ := srv["impl"].(string)
	if chosen == "" {
		impl, err := contract.Property(contract.TrialSpec, "server", "impl")
		if err != nil {
			return err
		}
		chosen, _ = impl["default"].(string)
	}
	for _, name := range implTables() {
		if name != chosen {
			delete(srv, name)
			continue
		}
		if _, present := srv[name]; !present {
			srv[name] = map[string]any{}
		}
		for knob, own := range CannotSet(name) {
			if _, present := srv[knob]; !present {
				srv[knob] = own
			}
		}
	}
	return nil
}

// CannotSet returns the common knobs implementation impl cannot set, each with the value that
// stands for its own behaviour — its default, and the only value it accepts (the schema's
// "x-cannot-set" on the implementation's table; none for an implementation without a table).
func CannotSet(impl string) map[string]any {
	if !slices.Contains(implTables(), impl) {
		return nil
	}
	table, err := contract.Property(contract.TrialSpec, "server", impl)
	if err != nil {
		return nil
	}
	own, _ := table["x-cannot-set"].(map[string]any)
	return own
}

// implTables lists the server object's implementation tables: the properties marked "x-impl",
// each named as the implementation it configures.
func implTables() []string {
	names, err := contract.Properties(contract.TrialSpec, "server")
	if err != nil {
		panic(err) // the embedded schema has a server object
	}
	var out []string
	for _, name := range names {
		p, err := contract.Property(contract.TrialSpec, "server", name)
		if err != nil {
			panic(err)
		}
		if owner, ok := p["x-impl"].(string); ok {
			if owner != name {
				panic(fmt.Sprintf("spec: server.%s configures %q: an implementation's table is named as it", name, owner))
			}
			out = append(out, name)
		}
	}
	return out
}

// DecodeServer reads a server object (JSON) against the trial spec's schema and fills it as a
// spec's is filled: for a server made in code (benchmarks, conformance runs, tests).
func DecodeServer(data []byte) (Server, error) {
	m, err := Object(contract.TrialSpec, []byte(`{"page":"x","server":`+string(data)+`}`))
	if err != nil {
		return Server{}, err
	}
	if err := Defaults(contract.TrialSpec, m); err != nil {
		return Server{}, err
	}
	var s struct {
		Server Server `json:"server"`
	}
	b, err := json.Marshal(m)
	if err != nil {
		return Server{}, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return Server{}, err
	}
	return s.Server, nil
}

// DefaultServer is the server object of a spec that names implementation impl and nothing else.
func DefaultServer(impl string) Server {
	b, _ := json.Marshal(map[string]string{"impl": impl})
	s, err := DecodeServer(b)
	if err != nil {
		panic(fmt.Sprintf("spec: the defaults of server.impl %q: %v", impl, err))
	}
	return s
}

// DecodeLab reads the lab's fields of a validated spec object m (a load test's, which refers to
// the trial spec's fields) as a trial spec's, with the seed that goes with them: checked against
// the trial spec's schema (whose rules across fields, shards with shard_mode, apply too), filled
// with its defaults and implementation tables. nil when m names no page.
func DecodeLab(m map[string]any) (*Lab, error) {
	if _, ok := m["page"]; !ok {
		return nil, nil
	}
	sub := map[string]any{}
	for _, f := range append(slices.Clone(Fields), "seed") {
		if v, ok := m[f]; ok {
			sub[f] = v
		}
	}
	if err := contract.Validate(contract.TrialSpec, sub); err != nil {
		return nil, err
	}
	if err := Defaults(contract.TrialSpec, sub); err != nil {
		return nil, err
	}
	lab := map[string]any{}
	for _, f := range Fields {
		lab[f] = sub[f]
	}
	var l Lab
	if err := Into(lab, &l, "spec.Lab"); err != nil {
		return nil, err
	}
	return &l, nil
}
