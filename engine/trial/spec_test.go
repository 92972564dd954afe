package trial

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/contract/contracttest"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/spec"
)

// {} plus a page is a valid spec; every default is the contract's.
func TestDecodeDefaults(t *testing.T) {
	s, err := DecodeSpec([]byte(`{"page":"twitter"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !trialIDRE.MatchString(s.TrialID) {
		t.Errorf("random trial id %q does not match the contract's pattern", s.TrialID)
	}
	s.TrialID = "x"
	want := &Spec{Contract: 1, TrialID: "x", Lab: spec.Lab{Page: "twitter", Shards: 1, ShardMode: "round-robin", Network: "native",
		Server: spec.Server{Impl: "builtin", MaxConcurrentStreams: 100, WriteChunkBytes: 0, TLSVersion: "1.3", KeepAlive: true, Push: "none"}},
		Protocols: []string{"h1s", "h2"}, Repetitions: 5, Order: "alternate", GapMs: 0, Seed: 1,
		Client: Client{Impl: "engine", Mode: "flat", MaxConnectionsPerOrigin: 6, DNS: "server", ComputeScale: 1, Priority: "none", TimeoutS: 120,
			View: "first", H3: "forced", CPUSlowdown: 1, Viewport: "1350x940"},
		Capture: Capture{HAR: true, Screenshots: true}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", s, want)
	}
}

// The defaults above are the schema's: the engine's resolved spec, as trial.json repeats it, is
// valid against $defs/resolved_spec (through trial-result) and the input spec against the schema.
func TestResolvedSpecValidatesAgainstSchema(t *testing.T) {
	schemas := contracttest.Load(t)
	for _, in := range []string{
		`{"page":"twitter"}`,
		`{"page":"nytimes","shards":0,"shard_mode":"domain"}`,
		`{"page":"synthetic:8x10kB","protocols":["h1","h3"],"network":"rtt=100ms,bw=1mbit,loss=1%","shards":2,"order":"random","gap_ms":2.5,"seed":9,
		  "server":{"max_concurrent_streams":1,"write_chunk_bytes":4096,"tls_version":"1.2","session_resumption":true,"keep_alive":false},
		  "client":{"mode":"objects","max_connections_per_origin":1,"dns":"static","timeout_s":30},"capture":{"har":false,"pcap":true}}`,
	} {
		if err := schemas.Validate(contracttest.TrialSpec, []byte(in)); err != nil {
			t.Fatalf("test input is not a valid spec: %v", err)
		}
		s, err := DecodeSpec([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Prepare(s)
		if err != nil {
			t.Fatal(err)
		}
		specJSON, _ := json.Marshal(p.Spec)
		if err := schemas.Validate(contracttest.TrialSpec, specJSON); err == nil {
			t.Errorf("the resolved spec carries network_resolved, which an input spec may not: the schema should refuse it")
		}
		result := map[string]any{
			"contract": 1, "spec": json.RawMessage(specJSON), "loads": 0, "errors": 0,
			"provenance": NewProvenance([]string{"wirelab-engine", "trial"}, time.Now()),
			"emulator": map[string]any{"lateness_us": map[string]any{"p50": 1, "p99": 2, "max": 3, "mean": 1.5}, "device_drops": 0,
				"up":   map[string]any{"packets": 0, "bytes": 0, "drops_queue": 0, "drops_loss": 0, "max_queue_packets": 0},
				"down": map[string]any{"packets": 0, "bytes": 0, "drops_queue": 0, "drops_loss": 0, "max_queue_packets": 0}},
		}
		b, _ := json.Marshal(result)
		if err := schemas.Validate(contracttest.TrialResult, b); err != nil {
			t.Errorf("trial.json with the resolved spec of %s: %v", in, err)
		}
	}
}

// Bad specs: one error naming the dotted path, the value and what is allowed.
func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"page":"twitter","server":{"max_concurent_streams":4}}`, `server.max_concurent_streams: unknown field; did you mean max_concurrent_streams?`},
		{`{"page":"twitter","repetitons":3}`, `repetitons: unknown field; did you mean repetitions?`},
		{`{"page":"twitter","capture":{"pcaps":true}}`, `capture.pcaps: unknown field; did you mean pcap?`},
		{`{"page":"twitter","zzz":1}`, `zzz: unknown field; allowed: allow_internet, capture, client, contract, gap_ms, network, order, page, protocols, repetitions, seed, server, shard_mode, shards, trial_id`},
		{`{}`, `page: required: a corpus name (twitter), a synthetic name (synthetic:64x10kB), a generated page (web200:17), a page JSON file or url:https://…`},
		{`{"page":""}`, `page: got ""; must be a corpus name (twitter), a synthetic name (synthetic:64x10kB), a generated page (web200:17), a page JSON file or url:https://…`},
		{`{"page":"twitter","protocols":["h2","http9"]}`, `protocols[1]: got "http9"; must be h1, h1s, h2, h2c, h3 or spdy3`},
		{`{"page":"twitter","protocols":["h2","h2s"]}`, `protocols[1]: got "h2s"; did you mean h2? must be h1, h1s, h2, h2c, h3 or spdy3`},
		{`{"page":"twitter","protocols":["h2","h2"]}`, `protocols[1]: got "h2"; listed twice (also at [0]); each at most once`},
		{`{"page":"twitter","protocols":[]}`, `protocols: got []; must list at least one of h1, h1s, h2, h2c, h3 or spdy3`},
		{`{"page":"twitter","protocols":"h2"}`, `protocols: got "h2"; must be a list of h1, h1s, h2, h2c, h3 or spdy3`},
		{`{"page":"twitter","shards":65}`, `shards: got 65; must be an integer 1–64, or 0 (one origin per top-level-domain group or per domain) with shard_mode tld or domain`},
		{`{"page":"twitter","shards":-1}`, `shards: got -1; must be an integer 1–64, or 0`},
		{`{"page":"twitter","shards":1.5}`, `shards: got 1.5; must be an integer 1–64, or 0`},
		{`{"page":"twitter","shards":"all"}`, `shards: got "all"; must be an integer 1–64, or 0`},
		{`{"page":"twitter","shards":0}`, `shards: got 0; 0 (one origin per top-level-domain group or per domain) needs shard_mode tld or domain; with shard_mode round-robin shards must be 1–64`},
		{`{"page":"twitter","shards":0,"shard_mode":"round-robin"}`, `shards: got 0; 0 (one origin per top-level-domain group or per domain) needs shard_mode tld or domain`},
		{`{"page":"twitter","shard_mode":"domains"}`, `shard_mode: got "domains"; did you mean domain? must be round-robin, tld or domain`},
		{`{"page":"twitter","shard_mode":"rr"}`, `shard_mode: got "rr"; must be round-robin, tld or domain`},
		{`{"page":"twitter","repetitions":"3"}`, `repetitions: got "3"; must be an integer 1–10000`},
		{`{"page":"twitter","gap_ms":-1}`, `gap_ms: got -1; must be a number 0–3600000`},
		{`{"page":"twitter","seed":-1}`, `seed: got -1; must be an integer 0–9223372036854775807`},
		{`{"page":"twitter","order":"zigzag"}`, `order: got "zigzag"; must be alternate or random`},
		{`{"page":"twitter","contract":2}`, `contract: got 2; must be 1`},
		{`{"page":"twitter","trial_id":"Has Caps"}`, `trial_id: got "Has Caps"; must be 1–40 characters`},
		{`{"page":"twitter","server":{"write_chunk_bytes":100}}`, `server.write_chunk_bytes: got 100; must be 0 (the implementation's own) or an integer 256–1048576`},
		{`{"page":"twitter","server":{"push":"some"}}`, `server.push: got "some"; must be none, all, embedding-level or dependency-level:N`},
		{`{"page":"twitter","server":{"keep_alive":"yes"}}`, `server.keep_alive: got "yes"; must be true or false`},
		{`{"page":"twitter","server":[]}`, `server: got an array; must be an object`},
		{`{"page":"twitter","client":{"timeout_s":0}}`, `client.timeout_s: got 0; must be a number > 0`},
		{`{"page":"twitter","client":{"dns":"system"}}`, `client.dns: got "system"; must be server or static`},
		{`[1]`, `spec: got an array; must be a JSON object`},
		{`{"page":"twitter"} {}`, `spec: invalid JSON: text after the value`},
		{`{"page":`, `spec: invalid JSON`},
	} {
		_, err := DecodeSpec([]byte(tc.in))
		if err == nil {
			t.Errorf("%s: accepted", tc.in)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%s:\n got %q\nwant %q…", tc.in, msg, tc.want)
		}
	}
}

// shard_mode takes the page package's three modes, and shards = 0 with tld or domain serves the
// page from one origin per top-level-domain group or per domain: as many origins as the page has.
func TestShardModesAndOneOriginPerGroup(t *testing.T) {
	var pageModes []string
	for _, m := range page.ShardModes {
		pageModes = append(pageModes, string(m))
	}
	if !reflect.DeepEqual(ShardModes, pageModes) {
		t.Errorf("trial.ShardModes %v, page.ShardModes %v: the contract and the page package disagree", ShardModes, pageModes)
	}
	if MaxShards != page.MaxOrigins {
		t.Errorf("MaxShards %d, page.MaxOrigins %d", MaxShards, page.MaxOrigins)
	}
	schemas := contracttest.Load(t)
	for _, tc := range []struct {
		in      string
		origins int
	}{
		{`{"page":"nytimes"}`, 1},
		{`{"page":"nytimes","shards":1,"shard_mode":"tld"}`, 1},
		{`{"page":"nytimes","shards":0,"shard_mode":"tld"}`, 4},
		{`{"page":"nytimes","shards":0,"shard_mode":"domain"}`, 7},
		{`{"page":"nytimes","shards":3,"shard_mode":"domain"}`, 3},
		{`{"page":"youtube","shards":0,"shard_mode":"tld"}`, 3},
		{`{"page":"youtube","shards":0,"shard_mode":"domain"}`, 4},
		{`{"page":"twitter","shards":2,"shard_mode":"round-robin"}`, 2},
	} {
		if err := schemas.Validate(contracttest.TrialSpec, []byte(tc.in)); err != nil {
			t.Errorf("%s: the schema refuses it: %v", tc.in, err)
		}
		s, err := DecodeSpec([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		p, err := Prepare(s)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if p.Origins() != tc.origins {
			t.Errorf("%s: %d origins, want %d", tc.in, p.Origins(), tc.origins)
		}
		if args := strings.Join(builtinArgv(t, p), " "); !strings.Contains(args, fmt.Sprintf("--shards %d --shard-mode %s", s.Shards, s.ShardMode)) {
			t.Errorf("%s: serve gets %q", tc.in, args)
		}
	}
	// the schema refuses what DecodeSpec refuses
	for _, in := range []string{
		`{"page":"nytimes","shards":0}`,
		`{"page":"nytimes","shards":0,"shard_mode":"round-robin"}`,
		`{"page":"nytimes","shard_mode":"domains"}`,
		`{"page":"nytimes","shards":65,"shard_mode":"tld"}`,
	} {
		if err := schemas.Validate(contracttest.TrialSpec, []byte(in)); err == nil {
			t.Errorf("%s: the schema accepts it", in)
		}
	}
}

// What needs the page, the profile and the machine is checked before anything is created.
func TestPrepareErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"page":"twitterr"}`, `page: got "twitterr"; must be a corpus page`},
		{`{"page":"synthetic:0x1kB","shards":2}`, `shards: got 2; the page has 0 objects besides the root`},
		{`{"page":"nytimes","shard_mode":"tld","shards":5}`, `shards: got 5; shard_mode tld: the page has 4 top-level-domain groups`},
		{`{"page":"nytimes","shard_mode":"domain","shards":8}`, `shards: got 8; shard_mode domain: the page has 7 domains`},
		{`{"page":"synthetic:8x1kB","shard_mode":"domain","shards":2}`, `shards: got 2; shard_mode domain: the page has 1 domains (www.wirelab.test)`},
		{`{"page":"twitter","network":"rtt=150"}`, `network: rtt: "150" has no unit`},
		{`{"page":"twitter","network":"trace_down=/nonexistent/trace"}`, `network: trace_down: "/nonexistent/trace"`},
		{`{"page":"twitter","client":{"impl":"chromium"},"protocols":["h2c"]}`, `protocols[0]: got "h2c"; not loadable by client.impl chromium`},
		{`{"page":"twitter","client":{"impl":"chromium","priority":"chrome"},"protocols":["h2"]}`, `client.priority: got "chrome"`},
		{`{"page":"twitter","server":{"push":"all"},"client":{"impl":"chromium"},"protocols":["h2"]}`, `server.push: got "all"; Chromium no longer accepts server push`},
	} {
		s, err := DecodeSpec([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: decode: %v", tc.in, err)
			continue
		}
		_, err = Prepare(s)
		if err == nil {
			t.Errorf("%s: accepted", tc.in)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%s:\n got %q\nwant %q…", tc.in, msg, tc.want)
		}
	}
}

// Every value of the contract is implemented: spdy3, every push policy and every priority policy
// are accepted, alone and together (issue 7 wired the last of them in).
func TestPrepareAcceptsMechanisms(t *testing.T) {
	for _, spec := range []string{
		`{"page":"twitter","protocols":["spdy3","h2"]}`,
		`{"page":"twitter","protocols":["h2","h2c","spdy3"],"server":{"push":"all"}}`,
		`{"page":"twitter","server":{"push":"embedding-level"}}`,
		`{"page":"twitter","server":{"push":"dependency-level:1"},"client":{"priority":"dependency"}}`,
		`{"page":"twitter","protocols":["h1","h3","spdy3"],"client":{"priority":"chrome","mode":"replay"}}`,
		`{"page":"twitter","network":"tcpplus=6,loss=1%","server":{"push":"dependency-level:2"}}`,
	} {
		s, err := DecodeSpec([]byte(spec))
		if err != nil {
			t.Errorf("%s: decode: %v", spec, err)
			continue
		}
		if _, err := Prepare(s); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

// A page file that fails its schema or has a dependency cycle is named with the field inside it.
func TestPreparePageFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"name":"p","seed":1,"origins":[{"host":"s1.wirelab.test"}],"objects":[
	  {"id":"root","path":"/index.html","origin":0,"size":2000,"type":"html","content_type":"text/html"},
	  {"id":"a","path":"/a.js","origin":0,"size":500,"type":"js","content_type":"application/javascript"}]`
	for _, tc := range []struct{ body, want string }{
		{good + `}`, ""},
		{strings.Replace(good, `"size":500`, `"size":0`, 1) + `}`, `objects[1].size: got 0`},
		{strings.Replace(good, `"size":500`, `"sise":500`, 1) + `}`, `objects[1].sise: unknown field; did you mean size?`},
		{good + `,"activities":[
		  {"id":"d0","kind":"download","object":"root","deps":[{"on":"e1"}]},
		  {"id":"d1","kind":"download","object":"a","deps":[{"on":"d0"}]},
		  {"id":"e1","kind":"evaluate","object":"a","duration_ms":1,"deps":[{"on":"d1"}]}]}`, `dependency cycle`},
	} {
		path := write("page.json", tc.body)
		s, err := DecodeSpec([]byte(`{"page":"` + path + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Prepare(s)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("valid page refused: %v", err)
		case tc.want != "" && err == nil:
			t.Errorf("accepted a page that should fail with %q", tc.want)
		case tc.want != "" && (!strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "page ("+path+"): ")):
			t.Errorf("got %q, want the page file named and %q", err, tc.want)
		}
	}
}
