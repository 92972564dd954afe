package trial

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"

	"github.com/wirelab/wirelab/engine/contract"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/spec"
)

// Contract is the version of docs/trial-contract.md this engine implements.
const Contract = 1

// Spec is a trial spec with every field resolved to its value or default. Marshalled, it is the
// "spec" object of trial.json. What each field means, its range and its default are the contract's
// schema's (engine/contract/schemas/trial-spec.schema.json; docs/trial-contract.md);
// TestSpecMatchesSchema keeps these structs and the schema's properties the same. The fields a
// load test shares (the page, its sharding, the network, the server) are spec.Lab's.
type Spec struct {
	Contract      int               `json:"contract"`
	TrialID       string            `json:"trial_id"` // random "t-" + 8 hex digits when the spec has none
	spec.Lab                        // page, shards, shard_mode, network, server
	AllowInternet bool              `json:"allow_internet"`
	Protocols     []string          `json:"protocols"`
	Repetitions   int               `json:"repetitions"`
	Order         string            `json:"order"`
	GapMs         float64           `json:"gap_ms"`
	Seed          int64             `json:"seed"`
	Client        Client            `json:"client"`
	Capture       Capture           `json:"capture"`
	NetworkRes    *profile.Resolved `json:"network_resolved,omitempty"` // set by Prepare
}

// Client holds the page loader's knobs.
type Client struct {
	Impl                    string  `json:"impl"` // engine | chromium
	Mode                    string  `json:"mode"` // flat | objects | replay
	MaxConnectionsPerOrigin int     `json:"max_connections_per_origin"`
	DNS                     string  `json:"dns"` // server | static
	ComputeScale            float64 `json:"compute_scale"`
	Priority                string  `json:"priority"` // none | chrome | dependency
	TimeoutS                float64 `json:"timeout_s"`
	View                    string  `json:"view"`         // first | repeat
	H3                      string  `json:"h3"`           // forced | alt-svc | https-rr
	CPUSlowdown             float64 `json:"cpu_slowdown"` // ≥ 1 (chromium)
	Viewport                string  `json:"viewport"`     // WIDTHxHEIGHT[@DPR][,mobile] (chromium)
}

// Capture says what is written per load besides its record.
type Capture struct {
	HAR  bool `json:"har"`
	Pcap bool `json:"pcap"`
	// Screenshots captures each Chromium load's frames (Speed Index, visual progress; frames/<load>/).
	Screenshots bool `json:"screenshots"`
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

// AllProtocols are the protocol names of the contract, in its order.
var AllProtocols = []string{"h1", "h1s", "h2", "h2c", "h3", "spdy3"}

var trialIDRE = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)

// DecodeSpec reads a trial spec strictly against the contract's schema
// (engine/contract/schemas/trial-spec.schema.json), the one definition of every field, its range
// and its default: unknown fields (with the closest name), wrong types and values out of range are
// a *fielderr.Error naming the dotted path (server.max_concurrent_streams). Every absent field
// gets the schema's default; of the implementation tables (server.apache, server.nginx, …) only
// the chosen implementation's is kept, filled with its defaults (spec.Defaults). It checks the
// spec on its own; Prepare checks what needs the page, the profile, the server and the machine.
func DecodeSpec(data []byte) (*Spec, error) {
	m, err := spec.Object(contract.TrialSpec, data)
	if err != nil {
		return nil, err
	}
	if err := spec.Defaults(contract.TrialSpec, m); err != nil {
		return nil, err
	}
	s := &Spec{}
	if err := spec.Into(m, s, "trial spec"); err != nil {
		return nil, err
	}
	if s.TrialID == "" {
		s.TrialID = randomTrialID()
	}
	return s, nil
}

func randomTrialID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return "t-" + hex.EncodeToString(b[:])
}
