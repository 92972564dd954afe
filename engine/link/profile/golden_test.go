package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const goldenPath = "../../../testdata/netprofile_golden.json"

type golden struct {
	OK []struct {
		Input    string          `json:"input"`
		Resolved json.RawMessage `json:"resolved"`
		Note     string          `json:"note"`
	} `json:"ok"`
	Errors []struct {
		Input   string `json:"input"`
		Field   string `json:"field"`
		Message string `json:"message"`
		Note    string `json:"note"`
	} `json:"errors"`
}

func loadGolden(t testing.TB) golden {
	t.Helper()
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("%s: %v", goldenPath, err)
	}
	if len(g.OK) == 0 || len(g.Errors) == 0 {
		t.Fatalf("%s: no cases", goldenPath)
	}
	return g
}

// jsonDiff compares two decoded JSON values; numbers within 1e-12, everything else exactly.
func jsonDiff(path string, got, want any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %v, want an object", path, got)
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, gok := g[k]
			wv, wok := w[k]
			switch {
			case !gok:
				return fmt.Sprintf("%s.%s: missing", path, k)
			case !wok:
				return fmt.Sprintf("%s.%s: unexpected (%v)", path, k, gv)
			}
			if d := jsonDiff(path+"."+k, gv, wv); d != "" {
				return d
			}
		}
		return ""
	case float64:
		g, ok := got.(float64)
		if !ok || math.Abs(g-w) > 1e-12 {
			return fmt.Sprintf("%s: got %v, want %v", path, got, want)
		}
		return ""
	default:
		if got != want {
			return fmt.Sprintf("%s: got %#v, want %#v", path, got, want)
		}
		return ""
	}
}

func caseName(input, note string) string {
	if input == "" {
		input = "(empty)"
	}
	if note != "" {
		input += " — " + note
	}
	return input
}

// TestGoldenOK: every ok case parses to exactly the documented resolved form, decodes strictly
// from it, and survives the String round trip.
func TestGoldenOK(t *testing.T) {
	for _, c := range loadGolden(t).OK {
		t.Run(caseName(c.Input, c.Note), func(t *testing.T) {
			r, err := Parse(c.Input)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.Input, err)
			}
			out, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(c.Resolved, &want); err != nil {
				t.Fatal(err)
			}
			if d := jsonDiff("", got, want); d != "" {
				t.Errorf("Parse(%q) resolved form differs: %s\n got: %s\nwant: %s", c.Input, d, out, c.Resolved)
			}
			decoded, err := DecodeResolved(c.Resolved)
			if err != nil {
				t.Fatalf("DecodeResolved(golden): %v", err)
			}
			if !decoded.Equal(r) {
				t.Errorf("DecodeResolved(golden) = %#v, Parse = %#v", decoded, r)
			}
			if err := r.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			s := r.String()
			back, err := Parse(s)
			if err != nil {
				t.Fatalf("Parse(String() = %q): %v", s, err)
			}
			if !back.Equal(r) {
				t.Errorf("String() = %q parses to %#v, want %#v", s, back, r)
			}
		})
	}
}

// errorLine is the documented shape: `<field>: "<value>" <what is wrong>; <what is allowed>`.
// Quoted parts (the value, and fragments of it that a problem may quote) may contain anything.
var errorLine = regexp.MustCompile(`^([^:\s"]+): ("(?:[^"\\]|\\.)*") ((?:[^;"]|"(?:[^"\\]|\\.)*")+); ((?:[^;"]|"(?:[^"\\]|\\.)*")+)$`)

func checkErrorShape(t *testing.T, err error, field, value string) {
	t.Helper()
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") {
		t.Errorf("error is not one line: %q", msg)
	}
	m := errorLine.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("error %q does not read `<field>: \"<value>\" <what is wrong>; <what is allowed>`", msg)
	}
	if m[1] != field {
		t.Errorf("error %q names field %q, want %q", msg, m[1], field)
	}
	if !strings.Contains(msg, value) {
		t.Errorf("error %q does not contain the value %q", msg, value)
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %q is a %T, want *profile.Error", msg, err)
	}
	if pe.Field != field {
		t.Errorf("Error.Field = %q, want %q", pe.Field, field)
	}
}

// TestGoldenErrors: every error case fails with exactly its message — the text the control plane's
// twin is held to — one line of the documented shape naming the field.
func TestGoldenErrors(t *testing.T) {
	for _, c := range loadGolden(t).Errors {
		t.Run(caseName(c.Input, c.Note), func(t *testing.T) {
			r, err := Parse(c.Input)
			if err == nil {
				t.Fatalf("Parse(%q) = %#v, want an error", c.Input, r)
			}
			if err.Error() != c.Message {
				t.Errorf("Parse(%q):\n got: %s\nwant: %s", c.Input, err, c.Message)
			}
			checkErrorShape(t, err, c.Field, "")
		})
	}
}
