package spec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/contract"
	"github.com/wirelab/wirelab/engine/contract/contracttest"
)

// The lab's fields are the trial spec's properties of the same names and kinds.
func TestLabMatchesSchema(t *testing.T) {
	props, err := contract.Properties(contract.TrialSpec)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for i := 0; i < reflect.TypeOf(Lab{}).NumField(); i++ {
		name, _, _ := strings.Cut(reflect.TypeOf(Lab{}).Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	if !reflect.DeepEqual(fields, Fields) {
		t.Errorf("Lab's fields %v, Fields %v", fields, Fields)
	}
	for _, f := range Fields {
		found := false
		for _, p := range props {
			found = found || p == f
		}
		if !found {
			t.Errorf("Lab field %s is not a trial spec property", f)
		}
	}
	contracttest.MatchStruct(t, contract.TrialSpec, reflect.TypeOf(Server{}), []string{"server"})
}

// A server object keeps only its implementation's table, under the implementation's name, and
// reads back as written; a knob the implementation cannot set defaults to its own behaviour.
func TestServerObject(t *testing.T) {
	s, err := DecodeServer([]byte(`{"impl":"nginx","nginx":{"worker_processes":2},"apache":{"mpm":"worker"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"impl":"nginx","max_concurrent_streams":100,"write_chunk_bytes":0,"tls_version":"1.3","session_resumption":false,` +
		`"keep_alive":true,"push":"none","nginx":{"keepalive_requests":1000,"keepalive_timeout_s":75,"open_file_cache":0,` +
		`"reuseport":false,"worker_connections":768,"worker_processes":2}}`
	if string(b) != want {
		t.Errorf("marshalled\n got %s\nwant %s", b, want)
	}
	var back Server
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("read back %+v (%v), want %+v", back, err, s)
	}
	if err := json.Unmarshal([]byte(`{"impl":"nginx","apache":{}}`), &back); err == nil {
		t.Error("another implementation's table was read")
	}
	if b, _ := json.Marshal(DefaultServer("builtin")); strings.Contains(string(b), "builtin\":") {
		t.Errorf("the built-in server has no table: %s", b)
	}
	for impl, want := range map[string]int{"builtin": 100, "apache": 100, "nginx": 100, "h2o": 100, "caddy": 0} {
		if got := DefaultServer(impl).MaxConcurrentStreams; got != want {
			t.Errorf("%s: max_concurrent_streams defaults to %d, want %d", impl, got, want)
		}
	}
	if s := DefaultServer("h2o"); !s.KeepAlive || s.Push != "none" || s.WriteChunkBytes != 0 {
		t.Errorf("h2o's own: %+v", s)
	}
	if s, err := DecodeServer([]byte(`{"impl":"caddy","max_concurrent_streams":7}`)); err != nil || s.MaxConcurrentStreams != 7 {
		t.Errorf("a value given is kept: %+v (%v)", s, err)
	}
	if _, err := DecodeServer([]byte(`{"impl":"caddy","caddy":{"gomaxprocs":-1}}`)); err == nil || !strings.HasPrefix(err.Error(), "server.caddy.gomaxprocs") {
		t.Errorf("a bad value of the table: %v", err)
	}
}

// CannotSet names only common knobs, each with a value the schema accepts.
func TestCannotSetIsValid(t *testing.T) {
	common := map[string]bool{"max_concurrent_streams": true, "write_chunk_bytes": true, "tls_version": true,
		"session_resumption": true, "keep_alive": true, "push": true}
	for _, impl := range implTables() {
		for knob, v := range CannotSet(impl) {
			if !common[knob] {
				t.Errorf("%s: x-cannot-set names %s, not a common knob", impl, knob)
			}
			b, _ := json.Marshal(map[string]any{"impl": impl, knob: v})
			if _, err := DecodeServer(b); err != nil {
				t.Errorf("%s: %s = %v: %v", impl, knob, v, err)
			}
		}
	}
	if CannotSet("builtin") != nil {
		t.Error("the built-in server sets every knob")
	}
}
