package impl

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/contract"
	"github.com/wirelab/wirelab/engine/contract/contracttest"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/spec"
)

// The registry is the contract's enum of server.impl, in its order.
func TestRegistryIsTheContractsEnum(t *testing.T) {
	p, err := contract.Property(contract.TrialSpec, "server", "impl")
	if err != nil {
		t.Fatal(err)
	}
	var enum []string
	for _, v := range p["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	if !slices.Equal(enum, Names()) {
		t.Errorf("registry %v, schema %v", Names(), enum)
	}
	if _, err := Lookup("ngnix"); err == nil {
		t.Error("Lookup accepted ngnix")
	}
	// Every implementation table of the schema belongs to a registered implementation.
	names, _ := contract.Properties(contract.TrialSpec, "server")
	for _, n := range names {
		q, _ := contract.Property(contract.TrialSpec, "server", n)
		if owner, ok := q["x-impl"].(string); ok && !slices.Contains(Names(), owner) {
			t.Errorf("server.%s belongs to %q, which is not registered", n, owner)
		}
	}
}

// Every implementation's table of knobs names the six common knobs, and every protocol it claims
// is a protocol of the contract.
func TestSupportTables(t *testing.T) {
	proto, _ := contract.Property(contract.TrialSpec, "protocols")
	var all []string
	for _, v := range proto["items"].(map[string]any)["enum"].([]any) {
		all = append(all, v.(string))
	}
	want := []string{"max_concurrent_streams", "write_chunk_bytes", "tls_version", "session_resumption", "keep_alive", "push"}
	for _, s := range All {
		sup := s.Support()
		if sup.Name != s.Name() {
			t.Errorf("%s: Support().Name %q", s.Name(), sup.Name)
		}
		var knobs []string
		own := spec.CannotSet(s.Name())
		for _, k := range sup.Knobs {
			knobs = append(knobs, k.Name)
			_, cannot := own[k.Name]
			switch {
			case k.How == "" && (len(k.Accepts) != 1 || !cannot):
				t.Errorf("%s: knob %s cannot be set; it must accept one value, the schema's x-cannot-set (accepts %v, schema %v)", s.Name(), k.Name, k.Accepts, own[k.Name])
			case k.How != "" && (len(k.Accepts) != 0 || cannot):
				t.Errorf("%s: knob %s is set (%s), yet accepts %v and the schema's x-cannot-set says %v", s.Name(), k.Name, k.How, k.Accepts, own[k.Name])
			}
		}
		if !slices.Equal(knobs, want) || !slices.Equal(knobs, commonKnobs) {
			t.Errorf("%s: knobs %v, want %v", s.Name(), knobs, want)
		}
		for _, p := range sup.Protocols {
			if !slices.Contains(all, p) {
				t.Errorf("%s serves %q, not a contract protocol", s.Name(), p)
			}
		}
	}
}

// Asking for what a server cannot do is one field error naming server.impl, before anything.
func TestCheckRefusesWhatAServerCannotDo(t *testing.T) {
	for _, tc := range []struct {
		impl      string
		protocols []string
		server    string // the server object
		want      string
	}{
		{"nginx", []string{"h1s", "h3"}, `{"impl":"nginx"}`, `protocols[1]: got "h3"; not served by server.impl nginx, which serves h1, h1s, h2`},
		{"nginx", []string{"h2c"}, `{"impl":"nginx"}`, `protocols[0]: got "h2c"; not served by server.impl nginx`},
		{"apache", []string{"spdy3"}, `{"impl":"apache"}`, `protocols[0]: got "spdy3"; not served by server.impl apache`},
		{"caddy", []string{"h2"}, `{"impl":"caddy","max_concurrent_streams":100}`, `server.max_concurrent_streams: got "100"; server.impl caddy cannot set it (Caddy 2.6 cannot set it: its HTTP/2 server allows 250`},
		{"apache", []string{"h2"}, `{"impl":"apache","write_chunk_bytes":4096}`, `server.write_chunk_bytes: got "4096"; server.impl apache cannot set it`},
		{"h2o", []string{"h1"}, `{"impl":"h2o","keep_alive":false}`, `server.keep_alive: got "false"; server.impl h2o cannot set it`},
		{"h2o", []string{"h2"}, `{"impl":"h2o","push":"all"}`, `server.push: got "all"; server.impl h2o cannot set it`},
		{"builtin", []string{"h2"}, `{"impl":"builtin","config":"/x.conf"}`, `server.config: got "/x.conf"; the built-in server has no configuration file`},
		{"nginx", []string{"h2"}, `{"impl":"nginx","config":"/x.conf","tls_version":"1.2"}`, `server.tls_version: got "1.2"; with server.config your configuration sets it`},
		{"caddy", []string{"h2"}, `{"impl":"caddy","config":"/x.conf","max_concurrent_streams":100}`, `server.max_concurrent_streams: got "100"; server.impl caddy cannot set it`},
	} {
		s, err := spec.DecodeServer([]byte(tc.server))
		if err != nil {
			t.Fatal(err)
		}
		srv, _ := Lookup(tc.impl)
		err = srv.Check(s, tc.protocols)
		if _, ok := fielderr.As(err); !ok || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s %v: %v\nwant %s…", tc.server, tc.protocols, err, tc.want)
		}
	}
	// server = { impl = X } and nothing else: every implementation runs with the defaults, over
	// every protocol it serves, with wirelab's configuration or the user's.
	for _, s := range All {
		def := spec.DefaultServer(s.Name())
		if err := s.Check(def, s.Support().Protocols); err != nil {
			t.Errorf("%s with the defaults and every protocol it serves: %v", s.Name(), err)
		}
		own := def
		own.MaxConcurrentStreams = 0
		if err := s.Check(own, s.Support().Protocols); err != nil {
			t.Errorf("%s with its own stream limit: %v", s.Name(), err)
		}
		if s.Support().Files {
			def.Config = "/x.conf"
			if err := s.Check(def, s.Support().Protocols); err != nil {
				t.Errorf("%s with server.config and the defaults: %v", s.Name(), err)
			}
		}
	}
	if got := spec.DefaultServer("caddy").MaxConcurrentStreams; got != 0 {
		t.Errorf("caddy's default max_concurrent_streams %d, want 0 (its own)", got)
	}
	if got := spec.DefaultServer("nginx").MaxConcurrentStreams; got != 100 {
		t.Errorf("nginx's default max_concurrent_streams %d, want the contract's 100", got)
	}
}

// Each implementation's own table is the schema's server.<name>: the same fields, decoded by the
// implementation alone, written back in its order (Canonical).
func TestOwnKnobsAreTheSchemas(t *testing.T) {
	for _, s := range All {
		own, ok := s.(OwnKnobs)
		_, err := contract.Property(contract.TrialSpec, "server", s.Name())
		if ok != (err == nil) {
			t.Errorf("%s: a table of its own %v, the schema's server.%s: %v", s.Name(), ok, s.Name(), err)
		}
		if !ok {
			continue
		}
		contracttest.MatchStruct(t, contract.TrialSpec, reflect.TypeOf(own.NewKnobs()).Elem(), []string{"server", s.Name()})
	}
	srv, err := spec.DecodeServer([]byte(`{"impl":"apache","apache":{"max_request_workers":600,"mpm":"worker"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := Canonical(&srv); err != nil {
		t.Fatal(err)
	}
	if want := `{"mpm":"worker","start_servers":0,"server_limit":0,"threads_per_child":0,"thread_limit":0,"max_request_workers":600,`; !strings.HasPrefix(string(srv.Own), want) {
		t.Errorf("canonical apache table %s, want %s…", srv.Own, want)
	}
}

// Each implementation reports the version installed here (the built-in server: the engine's).
func TestVersions(t *testing.T) {
	for _, s := range All {
		v := s.Version()
		if bin := s.Support().Binary; bin != "" {
			if _, err := os.Stat(bin); err != nil {
				if v != "" {
					t.Errorf("%s is not installed, yet its version is %q", s.Name(), v)
				}
				continue
			}
		}
		if v == "" || strings.Contains(v, "\n") {
			t.Errorf("%s: version %q", s.Name(), v)
		}
	}
}

// A load's tree holds every object under its origin's L/<token>/ with exactly the bytes the
// built-in server generates for that load; the static objects are hard links, made once.
func TestTreeHoldsTheBuiltinsBytes(t *testing.T) {
	pg, err := page.Load("nytimes", 1)
	if err != nil {
		t.Fatal(err)
	}
	if pg, err = pg.Shard(3, page.ShardRoundRobin); err != nil {
		t.Fatal(err)
	}
	tree, err := NewTree(filepath.Join(t.TempDir(), "www"), pg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tree.Make("tok1", "https", 0); err != nil {
		t.Fatal(err)
	}
	base := page.Base{Scheme: "https", Token: "tok1"}
	links := 0
	for i, o := range pg.Objects {
		path := filepath.Join(tree.OriginRoot(o.Origin), "L", "tok1", strings.TrimPrefix(o.Path, "/"))
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := pg.Body(i, base)
		want, _ := io.ReadAll(body)
		if string(got) != string(want) {
			t.Fatalf("%s differs from the built-in server's bytes", o.Path)
		}
		if st, _ := os.Stat(path); !pg.EmbedsURLs(i) && st.Sys() != nil {
			links++
		}
	}
	if links == 0 || !pg.EmbedsURLs(0) {
		t.Errorf("static objects %d, root embeds URLs %v", links, pg.EmbedsURLs(0))
	}
	if err := tree.Remove("tok1"); err != nil {
		t.Fatal(err)
	}
	for i := range pg.Origins {
		if _, err := os.Stat(filepath.Join(tree.OriginRoot(i), "L", "tok1")); !os.IsNotExist(err) {
			t.Errorf("origin %d: the load's tree is still there", i)
		}
	}
}

func TestStatusParsers(t *testing.T) {
	g, err := ParseStubStatus("Active connections: 2 \nserver accepts handled requests\n 10 10 31 \nReading: 0 Writing: 1 Waiting: 1 \n")
	if err != nil || g["active"] != 2 || g["requests"] != 31 || g["writing"] != 1 || g["waiting"] != 1 {
		t.Errorf("stub_status: %v %v", g, err)
	}
	if _, err := ParseStubStatus("garbage"); err == nil {
		t.Error("stub_status accepted garbage")
	}
	s, err := ParseServerStatus("ServerVersion: Apache/2.4.71\nBusyWorkers: 3\nIdleWorkers: 47\nConnsTotal: 5\nScoreboard: __W_K..RW_\n")
	if err != nil || s["busy_workers"] != 3 || s["idle_workers"] != 47 || s["conns_total"] != 5 ||
		s["scoreboard_sending"] != 2 || s["scoreboard_waiting"] != 4 || s["scoreboard_open_slot"] != 2 || s["scoreboard_reading"] != 1 {
		t.Errorf("server-status: %v %v", s, err)
	}
	p, err := ParsePrometheus("# HELP x\ngo_goroutines 12\ncaddy_http_requests_in_flight{server=\"a\",handler=\"f\"} 2\ncaddy_http_requests_in_flight{server=\"b\",handler=\"f\"} 3\nother 1\n"+
		"# TYPE lat histogram\nlat_bucket{le=\"0.1\"} 4\nlat_bucket{le=\"+Inf\"} 7\nlat_sum 1.5\nlat_count 7\n", map[string]string{
		"go_goroutines": "goroutines", "caddy_http_requests_in_flight": "requests_in_flight", "lat": "lat_observations"})
	if err != nil || p["goroutines"] != 12 || p["requests_in_flight"] != 5 || p["lat_observations"] != 7 || len(p) != 3 {
		t.Errorf("prometheus: %v %v", p, err)
	}
	if p, err := ParsePrometheus("<html>502 Bad Gateway</html>\n", caddyMetrics); err == nil {
		t.Errorf("prometheus: garbage read as %v", p)
	}
	h, err := ParseH2OStatus([]byte(`{"connections": 3, "max-connections": 1024, "worker-threads": 2, "requests": [{}, {}]}`))
	if err != nil || h["connections"] != 3 || h["requests_in_flight"] != 1 {
		t.Errorf("h2o status: %v %v", h, err)
	}
}

func TestAccessLogConversion(t *testing.T) {
	pg, _ := page.Load("twitter", 1)
	dir := t.TempDir()
	logs := map[string]string{
		"nginx":  `{"end":1000.5,"duration":0.25,"protocol":"HTTP/2.0","local":"10.77.1.1:443","remote":"10.77.0.2:5000","connection":3,"method":"GET","uri":"/L/tok/","status":200,"bytes":54334}`,
		"apache": `{"start":1000.25,"duration_us":250000,"protocol":"HTTP/1.1","local":"10.77.1.1:80","remote":"10.77.0.2:5001","method":"GET","uri":"/L/tok/css/o1.css","status":200,"bytes":60932}`,
		"caddy":  `{"level":"info","ts":1000.5,"logger":"http.log.access.wirelab","request":{"remote_ip":"10.77.0.2","remote_port":"5002","proto":"HTTP/3.0","method":"GET","host":"s1.wirelab.test","uri":"/L/tok/css/o1.css","tls":{"version":772}},"duration":0.25,"size":60932,"status":200}` + "\n" + `{"level":"info","ts":1000.6,"logger":"http.log.access.wirelab","request":{"remote_ip":"10.77.0.2","remote_port":"5002","proto":"HTTP/3.0","method":"GET","host":"s1.wirelab.test","uri":"/L/wirelab-ready/","tls":{}},"duration":0.1,"size":1,"status":200}`,
	}
	want := map[string]string{"nginx": "h2", "apache": "h1", "caddy": "h3"}
	for name, text := range logs {
		in := filepath.Join(dir, name+".log")
		out := filepath.Join(dir, name+".jsonl")
		os.WriteFile(in, []byte(text+"\n"), 0o644)
		srv, _ := Lookup(name)
		l, err := srv.Provision(&Provision{Dir: filepath.Join(dir, name), RunDir: dir, DocRoot: dir, Page: pg,
			Origins: []netip.Addr{netip.MustParseAddr("10.77.1.1")}, Protocols: []string{"h1"}, Server: spec.DefaultServer(name),
			CertDir: dir, Ports: DefaultPorts})
		if err != nil {
			t.Fatal(err)
		}
		l.AccessLog = in
		n, err := ConvertAccessLog(l, out, pg, DefaultPorts, "wirelab-ready")
		if err != nil || n != 1 {
			t.Fatalf("%s: %d records, %v", name, n, err)
		}
		b, _ := os.ReadFile(out)
		line := string(b)
		if !strings.Contains(line, `"protocol":"`+want[name]+`"`) || !strings.Contains(line, `"token":"tok"`) ||
			!strings.Contains(line, `"conn":1`) || !strings.Contains(line, `"start":"1970-01-01T00:16:40.25Z"`) {
			t.Errorf("%s: %s", name, line)
		}
		if name != "nginx" && !strings.Contains(line, `"object":"o1"`) {
			t.Errorf("%s: object not found: %s", name, line)
		}
	}
}

// The configuration each real server is given for every protocol it serves is one it accepts
// (its own configuration test, in a throwaway network namespace): every knob a template writes.
func TestGeneratedConfigurationsPassTheServersOwnTests(t *testing.T) {
	roottest.Require(t) // a network namespace for nginx -t, the servers' user
	pg, _ := page.Load("twitter", 1)
	for _, s := range All[1:] {
		if _, err := os.Stat(s.Support().Binary); err != nil {
			t.Errorf("%s is not installed (make setup): %v", s.Name(), err)
			continue
		}
		for _, edit := range []func(*spec.Server){
			func(k *spec.Server) {},
			func(k *spec.Server) { k.TLSVersion, k.SessionResumption = "1.2", true },
			func(k *spec.Server) { k.MaxConcurrentStreams = 0 },
		} {
			k := spec.DefaultServer(s.Name())
			edit(&k)
			if s.Name() == "apache" {
				k.Own = []byte(`{"mpm":"worker","threads_per_child":50,"max_request_workers":600,"start_servers":5,"min_spare_threads":50,"max_spare_threads":150}`)
			}
			if err := DryRun(context.Background(), s, k, s.Support().Protocols, pg); err != nil {
				t.Errorf("%s %+v: %v", s.Name(), k, err)
			}
		}
	}
}

// A user's configuration the server refuses is bad input quoting the server's own error line.
func TestUserConfigurationRefused(t *testing.T) {
	roottest.Require(t)
	if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
		t.Skip("nginx not installed")
	}
	pg, _ := page.Load("twitter", 1)
	bad := filepath.Join(t.TempDir(), "bad.conf")
	os.WriteFile(bad, []byte("events {}\nhttp { server { listen {{(index .Origins 0).Addr}}:80; frobnicate on; } }\n"), 0o644)
	k := spec.DefaultServer("nginx")
	k.Config = bad
	err := DryRun(context.Background(), Nginx{}, k, []string{"h1"}, pg)
	fe, ok := fielderr.As(err)
	if !ok || fe.Field != "server.config" || !strings.Contains(fe.Allowed, `unknown directive "frobnicate"`) {
		t.Errorf("%v", err)
	}
	good := filepath.Join(t.TempDir(), "good.conf")
	os.WriteFile(good, []byte("pid {{.PidFile}};\nerror_log {{.ErrorLog}};\nevents {}\nhttp {\n{{range .Origins}} server { listen {{.Addr}}:{{$.Ports.HTTP}}; root {{.Root}}; }\n{{end}}}\n"), 0o644)
	k.Config = good
	if err := DryRun(context.Background(), Nginx{}, k, []string{"h1"}, pg); err != nil {
		t.Errorf("a good user configuration: %v", err)
	}
	k.Config = filepath.Join(t.TempDir(), "tmpl.conf")
	os.WriteFile(k.Config, []byte("{{.NoSuchField}}"), 0o644)
	if err := DryRun(context.Background(), Nginx{}, k, []string{"h1"}, pg); err == nil || !strings.Contains(err.Error(), "server.config") {
		t.Errorf("a template naming an unknown field: %v", err)
	}
}

// nginx's keepalive_requests comes from its knob, and from the contract's default without one.
func TestNginxKeepaliveRequests(t *testing.T) {
	pg, _ := page.Load("twitter", 1)
	for _, tc := range []struct {
		knobs string // the table; "" = none (a server object made in code)
		want  []string
	}{
		{"", []string{"keepalive_requests 1000;", "keepalive_timeout 75s;", "listen 10.77.1.1:443 ssl http2;", "listen 10.77.1.1:80;"}},
		{`{"worker_connections":768,"keepalive_requests":12345,"keepalive_timeout_s":3600,"reuseport":true,"open_file_cache":500}`,
			[]string{"keepalive_requests 12345;", "keepalive_timeout 3600s;", "listen 10.77.1.1:443 ssl http2 reuseport;", "listen 10.77.1.1:80 reuseport;",
				"open_file_cache max=500;"}},
	} {
		dir := t.TempDir()
		k := spec.Server{Impl: "nginx", MaxConcurrentStreams: 100, TLSVersion: "1.3", KeepAlive: true, Push: "none"}
		if tc.knobs != "" {
			k.Own = []byte(tc.knobs)
		}
		in := &Provision{Dir: dir, RunDir: dir, DocRoot: dir, Page: pg, Origins: []netip.Addr{netip.MustParseAddr("10.77.1.1")},
			Protocols: []string{"h1", "h2"}, Server: k, CertDir: dir, Ports: DefaultPorts}
		l, err := Nginx{}.Provision(in)
		if err != nil {
			t.Fatal(err)
		}
		conf, err := os.ReadFile(l.Config)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range tc.want {
			if !strings.Contains(string(conf), line) {
				t.Errorf("knobs %s: want %q in the configuration:\n%s", tc.knobs, line, conf)
			}
		}
		var req, idle int
		fmt.Sscanf(tc.want[0], "keepalive_requests %d;", &req)
		fmt.Sscanf(tc.want[1], "keepalive_timeout %ds;", &idle)
		if cached := strings.Contains(string(conf), "open_file_cache"); cached != strings.Contains(tc.knobs, "open_file_cache") {
			t.Errorf("knobs %s: open_file_cache in the configuration: %v", tc.knobs, cached)
		}
		if l.Effective["keepalive_requests"] != req || l.Effective["keepalive_timeout_s"] != idle || l.Effective["reuseport"] != strings.Contains(tc.knobs, "reuseport") {
			t.Errorf("knobs %s: effective %v", tc.knobs, l.Effective)
		}
	}
}
