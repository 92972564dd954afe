package trial

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/page"
)

// Contract is the version of docs/trial-contract.md this engine implements.
const Contract = 1

// Spec is a trial spec (docs/trial-contract.md, schemas/trial-spec.schema.json) with every field
// resolved to its value or default. Marshalled, it is the "spec" object of trial.json.
type Spec struct {
	Contract    int               `json:"contract"`                   // contract version the spec was written for; 1
	TrialID     string            `json:"trial_id"`                   // [a-z0-9-]{1,40}; default "t-" + 8 random hex digits
	Page        string            `json:"page"`                       // corpus name, synthetic:NxS or a page JSON file (required)
	Shards      int               `json:"shards"`                     // origins the page's objects are spread over, 1–64, or 0 = one per group/domain (tld, domain); default 1
	ShardMode   string            `json:"shard_mode"`                 // round-robin (default) | tld | domain
	Protocols   []string          `json:"protocols"`                  // each at most once, ≥ 1; default [h1s, h2]
	Repetitions int               `json:"repetitions"`                // loads per protocol, 1–10000; default 5
	Order       string            `json:"order"`                      // alternate (default) | random (seeded shuffle)
	GapMs       float64           `json:"gap_ms"`                     // idle time between loads, ≥ 0; default 0
	Seed        int64             `json:"seed"`                       // loss, jitter, random order, page sizes and content; default 1
	Network     string            `json:"network"`                    // profile string as written; default native
	Server      Server            `json:"server"`                     // origin server knobs
	Client      Client            `json:"client"`                     // page loader knobs
	Capture     Capture           `json:"capture"`                    // what is written besides the load records
	NetworkRes  *profile.Resolved `json:"network_resolved,omitempty"` // set by Prepare
}

// Server holds the origin server's knobs.
type Server struct {
	Impl                 string `json:"impl"`                   // builtin
	MaxConcurrentStreams int    `json:"max_concurrent_streams"` // h2/h3 stream limit, 1–1000; default 100
	WriteChunkBytes      int    `json:"write_chunk_bytes"`      // 0 or 256–1048576; default 0
	TLSVersion           string `json:"tls_version"`            // 1.2 | 1.3 (default)
	SessionResumption    bool   `json:"session_resumption"`     // default false
	KeepAlive            bool   `json:"keep_alive"`             // default true
	Push                 string `json:"push"`                   // none (default) | all | embedding-level | dependency-level:N
}

// Client holds the page loader's knobs.
type Client struct {
	Impl                    string  `json:"impl"`                       // engine (default) | chromium
	Mode                    string  `json:"mode"`                       // flat (default) | objects | replay
	MaxConnectionsPerOrigin int     `json:"max_connections_per_origin"` // HTTP/1.x, 1–64; default 6
	DNS                     string  `json:"dns"`                        // server (default) | static
	ComputeScale            float64 `json:"compute_scale"`              // replay: ≥ 0; default 1
	Priority                string  `json:"priority"`                   // none (default) | chrome | dependency
	TimeoutS                float64 `json:"timeout_s"`                  // > 0; default 120
}

// Capture says what is written per load besides its record.
type Capture struct {
	HAR  bool `json:"har"`  // default true
	Pcap bool `json:"pcap"` // default false
}

// ShardModes are the values of shard_mode (page.ShardModes): round-robin deals the objects over
// the shards in turn; tld and domain keep each top-level-domain group (domain) on one origin.
var ShardModes = func() []string {
	out := make([]string, len(page.ShardModes))
	for i, m := range page.ShardModes {
		out[i] = string(m)
	}
	return out
}()

// MaxShards is the largest shards value. shards = 0 asks for one origin per top-level-domain group
// (shard_mode tld) or per domain (shard_mode domain): as many as the page has.
const MaxShards = 64

const shardsAllowed = "an integer 1–64, or 0 (one origin per top-level-domain group or per domain) with shard_mode tld or domain"

// AllProtocols are the protocol names of the contract, in its order.
var AllProtocols = []string{"h1", "h1s", "h2", "h2c", "h3", "spdy3"}

var (
	trialIDRE = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)
	pushRE    = regexp.MustCompile(`^(none|all|embedding-level|dependency-level:[1-9][0-9]*)$`)
)

// topFields etc. are the known fields of each object of the spec.
var (
	topFields     = []string{"contract", "trial_id", "page", "shards", "shard_mode", "protocols", "repetitions", "order", "gap_ms", "seed", "network", "server", "client", "capture"}
	serverFields  = []string{"impl", "max_concurrent_streams", "write_chunk_bytes", "tls_version", "session_resumption", "keep_alive", "push"}
	clientFields  = []string{"impl", "mode", "max_connections_per_origin", "dns", "compute_scale", "priority", "timeout_s"}
	captureFields = []string{"har", "pcap"}
)

// DecodeSpec reads a trial spec strictly: unknown fields, wrong types and values out of range are
// a *fielderr.Error naming the dotted path (server.max_concurrent_streams). It checks the spec on
// its own; Prepare checks what needs the page, the profile and the machine.
func DecodeSpec(data []byte) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, &fielderr.Error{Field: "spec", Allowed: "invalid JSON: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &fielderr.Error{Field: "spec", Allowed: "invalid JSON: text after the spec object"}
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, &fielderr.Error{Field: "spec", Value: typeName(raw), Allowed: "must be a JSON object"}
	}
	var err error
	top := &object{m: m, err: &err}
	top.known(topFields...)
	s := &Spec{}
	s.Contract = int(top.integer("contract", Contract, Contract, Contract))
	s.TrialID = top.str("trial_id", "")
	if _, ok := m["trial_id"]; ok && err == nil && !trialIDRE.MatchString(s.TrialID) {
		top.fail(fielderr.New("trial_id", s.TrialID, "must be 1–40 characters of a-z, 0-9 and -"))
	}
	if _, ok := m["page"]; !ok && err == nil {
		top.fail(&fielderr.Error{Field: "page", Allowed: "required: a corpus name (twitter), a synthetic name (synthetic:64x10kB) or a page JSON file"})
	}
	s.Page = top.str("page", "")
	if s.Page == "" && err == nil {
		top.fail(fielderr.New("page", s.Page, "must not be empty"))
	}
	s.Shards = int(top.integerAs("shards", 1, 0, MaxShards, shardsAllowed))
	s.ShardMode = top.enum("shard_mode", "round-robin", ShardModes...)
	if err == nil && s.Shards == 0 && s.ShardMode == "round-robin" {
		top.fail(fielderr.New("shards", 0, "0 (one origin per top-level-domain group or per domain) needs shard_mode tld or domain; with shard_mode round-robin shards must be 1–%d", MaxShards))
	}
	s.Protocols = top.strings("protocols", []string{"h1s", "h2"})
	if err == nil {
		checkProtocols(top, s.Protocols)
	}
	s.Repetitions = int(top.integer("repetitions", 5, 1, 10000))
	s.Order = top.enum("order", "alternate", "alternate", "random")
	s.GapMs = top.number("gap_ms", 0, 0, false)
	s.Seed = top.integer("seed", 1, 0, math.MaxInt64)
	s.Network = top.str("network", "native")

	srv := top.child("server")
	srv.known(serverFields...)
	s.Server = Server{
		Impl:                 srv.enum("impl", "builtin", "builtin"),
		MaxConcurrentStreams: int(srv.integer("max_concurrent_streams", 100, 1, 1000)),
		WriteChunkBytes:      int(srv.integer("write_chunk_bytes", 0, 0, 1048576)),
		TLSVersion:           srv.enum("tls_version", "1.3", "1.2", "1.3"),
		SessionResumption:    srv.boolean("session_resumption", false),
		KeepAlive:            srv.boolean("keep_alive", true),
		Push:                 srv.str("push", "none"),
	}
	if err == nil && s.Server.WriteChunkBytes != 0 && s.Server.WriteChunkBytes < 256 {
		srv.fail(fielderr.New("server.write_chunk_bytes", s.Server.WriteChunkBytes, "must be 0 (implementation default) or 256–1048576"))
	}
	if err == nil && !pushRE.MatchString(s.Server.Push) {
		srv.fail(fielderr.New("server.push", s.Server.Push, "must be none, all, embedding-level or dependency-level:N (N ≥ 1)"))
	}

	cl := top.child("client")
	cl.known(clientFields...)
	s.Client = Client{
		Impl:                    cl.enum("impl", "engine", "engine", "chromium"),
		Mode:                    cl.enum("mode", "flat", "flat", "objects", "replay"),
		MaxConnectionsPerOrigin: int(cl.integer("max_connections_per_origin", 6, 1, 64)),
		DNS:                     cl.enum("dns", "server", "server", "static"),
		ComputeScale:            cl.number("compute_scale", 1, 0, false),
		Priority:                cl.enum("priority", "none", "none", "chrome", "dependency"),
		TimeoutS:                cl.number("timeout_s", 120, 0, true),
	}

	capt := top.child("capture")
	capt.known(captureFields...)
	s.Capture = Capture{HAR: capt.boolean("har", true), Pcap: capt.boolean("pcap", false)}
	if err != nil {
		return nil, err
	}
	if s.TrialID == "" {
		s.TrialID = randomTrialID()
	}
	return s, nil
}

func checkProtocols(o *object, ps []string) {
	if len(ps) == 0 {
		o.fail(&fielderr.Error{Field: "protocols", Value: "[]", Allowed: "must list at least one of " + orList(AllProtocols)})
		return
	}
	seen := map[string]bool{}
	for i, p := range ps {
		field := fmt.Sprintf("protocols[%d]", i)
		if !contains(AllProtocols, p) {
			allowed := "not a protocol; must be " + orList(AllProtocols)
			if c := closest(p, AllProtocols); c != "" && c != p {
				allowed = "not a protocol; did you mean " + c + "? (" + orList(AllProtocols) + ")"
			}
			o.fail(fielderr.New(field, p, "%s", allowed))
			return
		}
		if seen[p] {
			o.fail(fielderr.New(field, p, "listed twice; each protocol at most once"))
			return
		}
		seen[p] = true
	}
}

func randomTrialID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return "t-" + hex.EncodeToString(b[:])
}
