package loadgen

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/contract"
	"github.com/wirelab/wirelab/engine/contract/contracttest"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/spec"
)

const minimal = `{"protocol":"h2","scenario":{"stages":[{"duration_s":60,"target":10}]}}`

func intp(n int) *int           { return &n }
func floatp(f float64) *float64 { return &f }

// A protocol and one stage make a spec; every default is the schema's.
func TestDecodeDefaults(t *testing.T) {
	s, err := Decode([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^lt-[0-9a-f]{8}$`).MatchString(s.LoadtestID) {
		t.Errorf("random id %q does not match the contract's pattern", s.LoadtestID)
	}
	s.LoadtestID = "x"
	want := &Spec{Contract: 1, LoadtestID: "x", Protocol: "h2", Seed: 1,
		Client:     Client{MaxConnectionsPerOrigin: 6, Connections: "per_vu", TimeoutS: 60, DNS: "static"},
		Scenario:   Scenario{Model: "closed", Stages: []Stage{{DurationS: 60, Target: intp(10)}}, Start: 1},
		Think:      Think{Distribution: "fixed", MeanS: 5},
		IntervalS:  10,
		SLA:        SLA{PageMs: 3000, Statistic: "p90"},
		Thresholds: []string{}, AtVUs: []int{},
		Limits: Limits{MaxDurationS: 7200, MaxVUs: 20000}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", s, want)
	}
	open, err := Decode([]byte(`{"protocol":"h1","scenario":{"model":"open","stages":[{"duration_s":10,"rate":5}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if open.Scenario.Start != 0 || open.Scenario.MaxVUs != 10000 || *open.Scenario.Stages[0].Rate != 5 {
		t.Errorf("open defaults: %+v", open.Scenario)
	}
}

// The lab's fields are the trial's (engine/spec), with its defaults: a server object's are a trial
// spec's, the implementation's own table and the knobs it cannot set included.
func TestDecodeLab(t *testing.T) {
	s, err := Decode([]byte(`{"protocol":"h1s","page":"neoload50","network":"rtt=85ms","seed":3,"server":{"max_concurrent_streams":50},` +
		`"scenario":{"stages":[{"duration_s":1200,"target":1000}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	server, _ := spec.DecodeServer([]byte(`{"max_concurrent_streams":50}`))
	want := &spec.Lab{Page: "neoload50", Shards: 1, ShardMode: "round-robin", Network: "rtt=85ms", Server: server}
	if !reflect.DeepEqual(s.Lab, want) || s.Seed != 3 {
		t.Errorf("lab %+v seed %d; want %+v and 3", s.Lab, s.Seed, want)
	}
	b, _ := json.Marshal(s)
	for _, k := range []string{`"page":"neoload50"`, `"shard_mode":"round-robin"`, `"max_concurrent_streams":50`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("resolved spec lacks %s: %s", k, b)
		}
	}
	caddy, err := Decode([]byte(`{"protocol":"h3","page":"twitter","server":{"impl":"caddy"},"scenario":{"stages":[{"duration_s":10,"target":1}]}}`))
	if err != nil || caddy.Server.MaxConcurrentStreams != 0 || string(caddy.Server.Own) != `{"gomaxprocs":0}` {
		t.Errorf("server = { impl = \"caddy\" }: %+v (%v); want Caddy's own stream limit (0) and its table", caddy.Lab, err)
	}
}

// Bad specs: one error naming the dotted path, the value and what is allowed — the list
// (zero or negative VUs, a stage of 0 s, think time < 0, an SLA statistic that does not exist, a
// threshold that does not parse) and the rest.
func TestDecodeErrors(t *testing.T) {
	stage := `"scenario":{"stages":[{"duration_s":60,"target":10}]}`
	for _, tc := range []struct{ in, want string }{
		{`{"protocol":"h2","scenario":{"stages":[{"duration_s":60,"target":0}],"start":0}}`, `scenario.stages: got 0 VUs throughout; at least one target (or start) must be ≥ 1`},
		{`{"protocol":"h2","scenario":{"stages":[{"duration_s":60,"target":-5}]}}`, `scenario.stages[0].target: got -5; must be an integer 0–1000000`},
		{`{"protocol":"h2","scenario":{"stages":[{"duration_s":0,"target":5}]}}`, `scenario.stages[0].duration_s: got 0; must be a number > 0 and ≤ 604800`},
		{`{"protocol":"h2","scenario":{"stages":[]}}`, `scenario.stages: got []; must list at least one of {duration_s, target} (closed model) or {duration_s, rate} (open)`},
		{`{"protocol":"h2","scenario":{}}`, `scenario.stages: required: a list of stages`},
		{`{"protocol":"h2","scenario":{"stages":[{"duration_s":5}]}}`, `scenario.stages[0].target: required`},
		{`{"protocol":"h2","scenario":{"stages":[{"duration_s":5,"rate":3}]}}`, `scenario.stages[0].rate: got 3; open model only (closed: target)`},
		{`{"protocol":"h2","scenario":{"model":"open","stages":[{"duration_s":5,"rate":0}]}}`, `scenario.stages: got 0 pages/s throughout; at least one rate (or start) must be > 0`},
		{`{"protocol":"h2","scenario":{"model":"opn","stages":[{"duration_s":1,"target":1}]}}`, `scenario.model: got "opn"; did you mean open? must be closed or open`},
		{`{"protocol":"h2","scenario":{"max_vus":3,"stages":[{"duration_s":5,"target":3}]}}`, `scenario.max_vus: got 3; open model only (closed: the stages' targets are the VUs)`},
		{`{"protocol":"h2",` + stage + `,"think":{"mean_s":-1}}`, `think.mean_s: got -1; must be a number 0–3600`},
		{`{"protocol":"h2",` + stage + `,"think":{"distribution":"poisson"}}`, `think.distribution: got "poisson"; must be fixed or exponential`},
		{`{"protocol":"h2","scenario":{"model":"open","stages":[{"duration_s":5,"rate":3}]},"think":{"mean_s":1}}`, `think: got an object; closed model only (open: arrivals set the pace)`},
		{`{"protocol":"h2",` + stage + `,"sla":{"statistic":"p999"}}`, `sla.statistic: got "p999"; did you mean p99? must be p50, p90, p95, p99, max or mean`},
		{`{"protocol":"h2",` + stage + `,"thresholds":["page_p95_ms << 3"]}`, `thresholds[0]: got "page_p95_ms << 3"; must be METRIC OP NUMBER`},
		{`{"protocol":"h2",` + stage + `,"thresholds":["page_p95_ms < 3s"]}`, `thresholds[0]: got "page_p95_ms < 3s"; "3s" is not a finite number`},
		{`{"protocol":"h2",` + stage + `,"thresholds":["p95 < 3000"]}`, `thresholds[0]: got "p95 < 3000"; unknown metric; allowed: `},
		{`{"protocol":"h2",` + stage + `,"thresholds":["page_p59_ms < 3000"]}`, `thresholds[0]: got "page_p59_ms < 3000"; unknown metric "page_p59_ms"; did you mean page_p50_ms?`},
		{`{"protocol":"h2",` + stage + `,"thresholds":["errors"]}`, `thresholds[0]: got "errors"; must be METRIC OP NUMBER`},
		{`{"protocol":"h2",` + stage + `,"interval_s":0}`, `interval_s: got 0; must be a number 0.1–3600`},
		{`{"protocol":"h2",` + stage + `,"client":{"conections":"per_vu"}}`, `client.conections: unknown field; did you mean connections?`},
		{`{"protocol":"h2",` + stage + `,"client":{"timeout_s":0}}`, `client.timeout_s: got 0; must be a number > 0`},
		{`{"protocol":"h2",` + stage + `,"client":{"max_connections_per_origin":65}}`, `client.max_connections_per_origin: got 65; must be an integer 1–64`},
		{`{"protocol":"h2s",` + stage + `}`, `protocol: got "h2s"; did you mean h2?`},
		{`{` + stage + `}`, `protocol: required: one of h1, h1s, h2, h2c, h3 or spdy3`},
		{`{"protocol":"h2",` + stage + `,"server":{"push":"all"}}`, `page: got null; required with shards, shard_mode or server`},
		{`{"protocol":"h2",` + stage + `,"page":"twitter","server":{"max_concurent_streams":4}}`, `server.max_concurent_streams: unknown field; did you mean max_concurrent_streams?`},
		{`{"protocol":"h2",` + stage + `,"page":"twitter","shards":0}`, `shards: got 0; 0 (one origin per top-level-domain group or per domain) needs shard_mode tld or domain`},
		{`{"protocol":"h2","scenario":{"stages":[{"duration_s":7000,"target":10},{"duration_s":300,"target":10}]}}`, `scenario.stages: got 7300 s in all; must last at most limits.max_duration_s (7200 s)`},
		{`{"protocol":"h2","scenario":{"stages":[{"duration_s":60,"target":30000}]}}`, `scenario.stages: got 30000 VUs at the peak; must stay within limits.max_vus (20000)`},
		{`{"protocol":"h2","scenario":{"model":"open","max_vus":500,"stages":[{"duration_s":60,"rate":3}]},"limits":{"max_vus":100}}`, `scenario.max_vus: got 500; must be at most limits.max_vus (100)`},
		{`{"protocol":"h2",` + stage + `,"at_vus":[100,100]}`, `at_vus[1]: got 100; listed twice`},
		{`{"protocol":"h2",` + stage + `,"loadtest_id":"A b"}`, `loadtest_id: got "A b"; must be 1–40 characters of a-z, 0-9 and -`},
		{`{"protocol":"h2",` + stage + `,"vus":3}`, `vus: unknown field; allowed: allow_internet, at_vus, client, contract`},
		{`[]`, `spec: got an array; must be a JSON object`},
	} {
		_, err := Decode([]byte(tc.in))
		if err == nil {
			t.Errorf("%s: accepted", tc.in)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s:\n got %s\nwant %s…", tc.in, err, tc.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", tc.in, err)
		}
	}
}

// The Go decoder and the JSON Schema agree: what one accepts the other accepts (apart from what
// only the engine can check: totals against limits, threshold metrics), and the decoder's
// defaults are the schema's.
func TestDecoderAgreesWithSchema(t *testing.T) {
	schemas := contracttest.Load(t)
	stage := `"scenario":{"stages":[{"duration_s":60,"target":10}]}`
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{minimal, true},
		{`{"protocol":"h3","page":"neoload50","shards":2,"seed":0,"network":"rtt=40ms","server":{"push":"all"},"client":{"max_connections_per_origin":1,"connections":"per_iteration","timeout_s":5,"dns":"server"},` +
			`"scenario":{"model":"closed","start":0,"stages":[{"duration_s":1,"target":1000},{"duration_s":2.5,"target":0}]},"think":{"distribution":"exponential","mean_s":0},` +
			`"interval_s":0.1,"sla":{"page_ms":1,"statistic":"max"},"thresholds":["errors == 0","page_p95_ms<3000"],"at_vus":[1,2],"limits":{"max_duration_s":10,"max_vus":1000}}`, true},
		{`{"protocol":"h2","scenario":{"model":"open","start":2.5,"max_vus":3,"stages":[{"duration_s":1,"rate":0.5}]},"seed":5}`, true},
		{`{"protocol":"h2","page":"nytimes","shards":0,"shard_mode":"tld",` + stage + `}`, true},
		{`{"protocol":"h2","page":"nytimes","shards":0,` + stage + `}`, false},
		{`{"protocol":"h2","server":{},` + stage + `}`, false},
		{`{"protocol":"h2",` + stage + `,"extra":1}`, false},
		{`{"protocol":"h2","scenario":{"stages":[{"duration_s":0,"target":1}]}}`, false},
		{`{"protocol":"h2","scenario":{"stages":[{"duration_s":1,"target":1.5}]}}`, false},
		{`{"protocol":"h2","scenario":{"stages":[{"duration_s":1,"rate":1}]}}`, false},
		{`{"protocol":"h2","scenario":{"model":"open","stages":[{"duration_s":1,"target":1}]}}`, false},
		{`{"protocol":"h2","scenario":{"start":1.5,"stages":[{"duration_s":1,"target":1}]}}`, false},
		{`{"protocol":"h2","scenario":{"max_vus":2,"stages":[{"duration_s":1,"target":1}]}}`, false},
		{`{"protocol":"h2","scenario":{"model":"open","stages":[{"duration_s":1,"rate":1}]},"think":{}}`, false},
		{`{"protocol":"h2",` + stage + `,"think":{"mean_s":-1}}`, false},
		{`{"protocol":"h2",` + stage + `,"interval_s":0.05}`, false},
		{`{"protocol":"h2",` + stage + `,"sla":{"statistic":"p999"}}`, false},
		{`{"protocol":"h2",` + stage + `,"client":{"dns":"system"}}`, false},
		{`{"protocol":"h2",` + stage + `,"client":{"timeout_s":0}}`, false},
		{`{"protocol":"h2",` + stage + `,"at_vus":[0]}`, false},
		{`{"protocol":"h2",` + stage + `,"at_vus":[3,3]}`, false},
		{`{"protocol":"h2",` + stage + `,"limits":{"max_vus":0}}`, false},
		{`{"protocol":"h2",` + stage + `,"thresholds":["errors"]}`, false},
		{`{"protocol":"h9",` + stage + `}`, false},
	} {
		schemaErr := schemas.Validate(contracttest.LoadtestSpec, []byte(tc.in))
		_, decErr := Decode([]byte(tc.in))
		if (schemaErr == nil) != tc.ok || (decErr == nil) != tc.ok {
			t.Errorf("%s: schema %v, decoder %v; want accepted = %v", tc.in, schemaErr, decErr, tc.ok)
		}
	}
	// Every property of the schema is a field of the resolved spec (with a page: the lab's too;
	// target is the alternative to the page, checked after).
	full, err := Decode([]byte(`{"protocol":"h2","page":"twitter","scenario":{"stages":[{"duration_s":1,"target":1}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(full)
	resolved := map[string]any{}
	json.Unmarshal(raw, &resolved)
	props, err := contract.Properties(contract.LoadtestSpec)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range resolved {
		keys = append(keys, k)
	}
	if !sameSet(append(keys, "target"), props) {
		t.Errorf("resolved spec fields %v, schema properties %v", keys, props)
	}
	// A target's every field is resolved too (defaults from the schema).
	tgt, err := Decode([]byte(`{"protocol":"h2","target":{"url":"https://h2.wirelab.test/"},"network":"neoload","scenario":{"stages":[{"duration_s":1,"target":1}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(tgt.Target)
	got := map[string]any{}
	json.Unmarshal(raw, &got)
	if len(got) != 7 || tgt.AccessNetwork != "neoload" || tgt.Lab != nil {
		t.Errorf("target resolved to %s (network %q, lab %v)", raw, tgt.AccessNetwork, tgt.Lab)
	}
}

func TestDecodeTarget(t *testing.T) {
	stage := `"scenario":{"stages":[{"duration_s":1,"target":1}]}`
	for _, tc := range []struct{ in, field string }{
		{`{"protocol":"h2","page":"twitter","target":{"url":"https://a.example/"},` + stage + `}`, "page"},
		{`{"protocol":"h2","target":{"url":"ftp://a.example/"},` + stage + `}`, "target.url"},
		{`{"protocol":"h2","target":{},` + stage + `}`, "target.url"},
		{`{"protocol":"h2","target":{"url":"https://a.example/","resolve":{"a.example":"x"}},` + stage + `}`, `target.resolve["a.example"]`},
		{`{"protocol":"h2","target":{"url":"https://a.example/","status_format":"iis"},` + stage + `}`, "target.status_format"},
		{`{"protocol":"h2","target":{"url":"https://a.example/"},"server":{"impl":"nginx"},` + stage + `}`, "page"},
		{`{"protocol":"h2","network":"neoload",` + stage + `}`, "page"},
		{`{"protocol":"h2","target":{"url":"https://a.example/"},"network":"nosuch",` + stage + `}`, "network"},
	} {
		_, err := Decode([]byte(tc.in))
		fe, ok := fielderr.As(err)
		if !ok || fe.Field != tc.field {
			t.Errorf("%s: got %v; want an error naming %s", tc.in, err, tc.field)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}
