package trial

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/client"
	"github.com/wirelab/wirelab/engine/contract"
	"github.com/wirelab/wirelab/engine/contract/contracttest"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// The schema is the one definition of the trial spec; the Go structs are its view. Every property
// of the schema is a field of the struct at the same path, of a matching kind, and the other way
// round — so a field added to the schema and not here (or here and not there) fails this test.
// The implementation tables are the implementations' (server/impl's TestOwnKnobsAreTheSchemas).
func TestSpecMatchesSchema(t *testing.T) {
	contracttest.MatchStruct(t, contract.TrialSpec, reflect.TypeOf(Spec{}), nil, "network_resolved")
}

// The protocol names of the contract are the schema's; the server, the loader and the trial
// know the same ones, in the same order.
func TestProtocolListsAreTheSchemas(t *testing.T) {
	node, err := contract.Property(contract.TrialSpec, "protocols")
	if err != nil {
		t.Fatal(err)
	}
	var schema []string
	for _, v := range node["items"].(map[string]any)["enum"].([]any) {
		schema = append(schema, v.(string))
	}
	var srv, cl []string
	for _, p := range server.AllProtocols {
		srv = append(srv, string(p))
	}
	for _, p := range client.Protocols {
		cl = append(cl, string(p))
	}
	for name, got := range map[string][]string{"trial.AllProtocols": AllProtocols, "server.AllProtocols": srv, "client.Protocols": cl} {
		if !slices.Equal(got, schema) {
			t.Errorf("%s = %v; the schema's protocols are %v", name, got, schema)
		}
	}
	modes, _ := contract.Property(contract.TrialSpec, "shard_mode")
	var pageModes []any
	for _, m := range page.ShardModes {
		pageModes = append(pageModes, string(m))
	}
	if !reflect.DeepEqual(modes["enum"], pageModes) {
		t.Errorf("shard_mode enum %v, page.ShardModes %v", modes["enum"], pageModes)
	}
	h3, _ := contract.Property(contract.TrialSpec, "client", "h3")
	var h3Modes []any
	for _, m := range client.H3Discoveries {
		h3Modes = append(h3Modes, string(m))
	}
	if !reflect.DeepEqual(h3["enum"], h3Modes) || h3["default"] != string(client.H3Forced) {
		t.Errorf("client.h3 enum %v default %v, client.H3Discoveries %v", h3["enum"], h3["default"], h3Modes)
	}
	conns, _ := contract.Property(contract.TrialSpec, "client", "max_connections_per_origin")
	if max, _ := conns["maximum"].(interface{ String() string }); max == nil || max.String() != strconv.Itoa(client.MaxConnectionsPerOriginLimit) {
		t.Errorf("client.max_connections_per_origin maximum %v, the loader's limit %d", conns["maximum"], client.MaxConnectionsPerOriginLimit)
	}
	shards, _ := contract.Property(contract.TrialSpec, "shards")
	if max, _ := shards["maximum"].(interface{ String() string }); max == nil || max.String() != "64" || MaxShards != page.MaxOrigins || page.MaxOrigins != 64 {
		t.Errorf("shards maximum %v, MaxShards %d, page.MaxOrigins %d", shards["maximum"], MaxShards, page.MaxOrigins)
	}
}

// server.push's pattern accepts exactly the policies the server parses: N of dependency-level:N
// runs 1–server.MaxPushLevel.
func TestPushPatternIsTheServers(t *testing.T) {
	for _, p := range []string{"none", "all", "embedding-level", "dependency-level:1", "dependency-level:999", "dependency-level:1000",
		"dependency-level:1001", "dependency-level:0", "dependency-level:01", "some", "dependency-level:"} {
		_, serverErr := server.ParsePushPolicy(p)
		_, specErr := DecodeSpec([]byte(`{"page":"twitter","server":{"push":"` + p + `"}}`))
		if (serverErr == nil) != (specErr == nil) {
			t.Errorf("push %q: the server says %v, the schema %v", p, serverErr, specErr)
		}
	}
}

// An implementation's table is kept, filled with its defaults, when that implementation is
// chosen, and left out otherwise; a common knob it cannot set defaults to its own behaviour.
func TestImplTables(t *testing.T) {
	s, err := DecodeSpec([]byte(`{"page":"twitter","server":{"impl":"apache","apache":{"mpm":"worker"},"nginx":{"worker_processes":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var apache map[string]any
	if err := json.Unmarshal(s.Server.Own, &apache); err != nil || apache["mpm"] != "worker" || apache["max_request_workers"] != 0.0 {
		t.Errorf("apache chosen: %s (%v)", s.Server.Own, err)
	}
	b, _ := json.Marshal(s.Server)
	if !strings.Contains(string(b), `"apache":{`) || strings.Contains(string(b), `"nginx"`) || s.Server.MaxConcurrentStreams != 100 {
		t.Errorf("apache chosen: %s", b)
	}
	s, err = DecodeSpec([]byte(`{"page":"twitter","server":{"impl":"nginx"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var nginx struct {
		WorkerConnections int `json:"worker_connections"`
		KeepaliveRequests int `json:"keepalive_requests"`
	}
	if err := json.Unmarshal(s.Server.Own, &nginx); err != nil || nginx.WorkerConnections != 768 || nginx.KeepaliveRequests != 1000 {
		t.Errorf("nginx chosen: %s (%v)", s.Server.Own, err)
	}
	if s, _ := DecodeSpec([]byte(`{"page":"twitter"}`)); s.Server.Own != nil {
		t.Errorf("builtin has no table: %+v", s.Server)
	}
	s, err = DecodeSpec([]byte(`{"page":"twitter","server":{"impl":"caddy"}}`))
	if err != nil || s.Server.MaxConcurrentStreams != 0 || string(s.Server.Own) != `{"gomaxprocs":0}` {
		t.Errorf("caddy chosen: %+v (%v): max_concurrent_streams must default to 0, Caddy's own", s.Server, err)
	}
	if s, err = DecodeSpec([]byte(`{"page":"twitter","server":{"impl":"caddy","max_concurrent_streams":50}}`)); err != nil || s.Server.MaxConcurrentStreams != 50 {
		t.Errorf("a value given is kept (Prepare refuses it): %+v (%v)", s.Server, err)
	}
	if _, err := DecodeSpec([]byte(`{"page":"twitter","server":{"impl":"nginx","apache":{"mpm":"evnt"}}}`)); err == nil ||
		!strings.HasPrefix(err.Error(), `server.apache.mpm: got "evnt"; did you mean event?`) {
		t.Errorf("a bad value in another implementation's table: %v", err)
	}
	// trial.json's spec reads back as it was written.
	s, _ = DecodeSpec([]byte(`{"page":"twitter","server":{"impl":"h2o","h2o":{"num_threads":3}}}`))
	b, _ = json.Marshal(s)
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Server, s.Server) {
		t.Errorf("round trip: %+v (%v), want %+v", back.Server, err, s.Server)
	}
}

// The engine reports the same field, words and line for a bad spec as the control plane
// (testdata/trial_spec_errors.json, read by tests/test_contract_models.py too).
func TestSharedErrorCases(t *testing.T) {
	b, err := os.ReadFile("../../testdata/trial_spec_errors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Spec    json.RawMessage `json:"spec"`
			Field   string          `json:"field"`
			Value   json.RawMessage `json:"value"`
			Allowed string          `json:"allowed"`
			Message string          `json:"message"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	for _, c := range file.Cases {
		_, err := DecodeSpec(c.Spec)
		fe, ok := fielderr.As(err)
		if !ok {
			t.Errorf("%s: %v, want a field error", c.Spec, err)
			continue
		}
		if fe.Field != c.Field || fe.Allowed != c.Allowed {
			t.Errorf("%s:\n got %s | %s\nwant %s | %s", c.Spec, fe.Field, fe.Allowed, c.Field, c.Allowed)
		}
		if err.Error() != c.Message {
			t.Errorf("%s:\n got %s\nwant %s", c.Spec, err, c.Message)
		}
		if c.Value != nil {
			var v any
			_ = json.Unmarshal(c.Value, &v)
			if want := contract.Show(showable(v)); fe.Value != want {
				t.Errorf("%s: value %s, want %s", c.Spec, fe.Value, want)
			}
		}
	}
}

func showable(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return json.Number(strconv.FormatInt(int64(f), 10))
	}
	return v
}

// The loader's flags are bounded as the spec's fields they carry (fetch and browse refuse what the
// schema refuses): --compute-scale as client.compute_scale, --timeout as client.timeout_s.
func TestLoaderFlagBoundsAreTheSchemas(t *testing.T) {
	for field, want := range map[string]float64{"compute_scale": seam.MaxComputeScale, "timeout_s": seam.MaxTimeout.Seconds()} {
		p, err := contract.Property(contract.TrialSpec, "client", field)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := strconv.ParseFloat(fmt.Sprint(p["maximum"]), 64); err != nil || got != want {
			t.Errorf("client.%s: schema maximum %v, seam's %v", field, p["maximum"], want)
		}
	}
}
