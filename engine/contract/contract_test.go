package contract

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := Decode("spec", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Defaults come from the schema, into nested objects that are present or defaulted.
func TestApplyDefaults(t *testing.T) {
	v := decode(t, `{"page":"x","server":{"impl":"nginx"}}`).(map[string]any)
	if err := ApplyDefaults(TrialSpec, v); err != nil {
		t.Fatal(err)
	}
	srv := v["server"].(map[string]any)
	if srv["impl"] != "nginx" || srv["max_concurrent_streams"] != json.Number("100") || srv["tls_version"] != "1.3" {
		t.Errorf("server defaults: %v", srv)
	}
	if _, ok := srv["nginx"]; ok {
		t.Errorf("a table without a default was created: %v", srv)
	}
	if c := v["client"].(map[string]any); c["impl"] != "engine" || c["timeout_s"] != json.Number("120") {
		t.Errorf("client defaults: %v", c)
	}
	if err := Validate(TrialSpec, v); err != nil {
		t.Errorf("the defaulted spec is invalid: %v", err)
	}
}

// Long values and names are cut in messages: a 130 kB unknown word stays one short line.
func TestLongValuesAreCut(t *testing.T) {
	word := strings.Repeat("x", 130_000)
	for _, in := range []string{`{"page":"x","` + word + `":1}`, `{"page":"x","server":{"impl":"` + word + `"}}`} {
		err := Validate(TrialSpec, decode(t, in))
		if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "130000 bytes") {
			t.Errorf("message of %d bytes: %.200v", len(err.Error()), err)
		}
	}
}

func TestPropertyAndDescribe(t *testing.T) {
	p, err := Property(TrialSpec, "server", "apache", "mpm")
	if err != nil {
		t.Fatal(err)
	}
	if got := Describe(p); got != "event, worker or prefork" {
		t.Errorf("Describe(mpm) = %q", got)
	}
	if _, err := Property(TrialSpec, "server", "nope"); err == nil {
		t.Error("an unknown property was found")
	}
	names, err := Properties(TrialSpec)
	if err != nil || len(names) < 10 || names[0] != "allow_internet" {
		t.Errorf("Properties = %v, %v", names, err)
	}
	for _, name := range Names {
		if err := Validate(name, map[string]any{}); err != nil {
			if _, ok := fielderr.As(err); !ok {
				t.Errorf("%s: %v is not a field error", name, err)
			}
		}
	}
}

// Two problems in one object get the same message every time (the validator and Go's maps list
// them in random order: the trial spec's fuzz target found `client.` one run and `client[0]` the
// next), and a key that is not a plain name is quoted rather than shown as an index or nothing.
func TestSameInputSameMessage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"page":"x","client":{"zz":1,"":1,"0":1}}`, `client[""]: unknown field; allowed: `},
		{`{"page":"x","client":{"zz":1,"b.c":1}}`, `client["b.c"]: unknown field; allowed: `},
		{`{"page":"x","protocols":["h2","h9"]}`, `protocols[1]: got "h9"`},
		{`{"page":"x","gap_ms":1e999,"seed":1e999}`, `gap_ms: got 1e999; must be a finite number`},
		{`{"page":"x","server":{"b":1e999,"a":[1,1e999]}}`, `server.a[1]: got 1e999; must be a finite number`},
	} {
		var first string
		for i := 0; i < 50; i++ {
			var err error
			v, derr := Decode("spec", []byte(c.in))
			if err = derr; err == nil {
				err = Validate(TrialSpec, v)
			}
			if err == nil {
				t.Fatalf("%s: accepted", c.in)
			}
			if i == 0 {
				first = err.Error()
				if !strings.HasPrefix(first, c.want) {
					t.Errorf("%s: %q, want it to begin %q", c.in, first, c.want)
				}
			} else if err.Error() != first {
				t.Fatalf("%s: %q once, then %q", c.in, first, err)
			}
		}
	}
}
