package why

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/contract"
)

var update = flag.Bool("update", false, "rewrite the load record schema's $defs from why.Defs")

// schemaFile is the load record's schema, relative to this package.
const schemaFile = "../contract/schemas/load-record.schema.json"

// whyDefs are the entries of the load record schema's "$defs" why.Defs makes (the record's "why"
// object and "why_path"'s part names): the parts' keys and their summaries are written once, in
// Defs. The schema's other $defs are its own.
func whyDefs() string {
	var b strings.Builder
	b.WriteString(whyDefsStart)
	b.WriteString("      \"$comment\": \"generated from engine/why's Defs: go test ./why -run TestSchemaParts -update\",\n")
	b.WriteString("      \"type\": \"object\",\n")
	b.WriteString("      \"additionalProperties\": false,\n")
	keys, _ := json.Marshal(Keys())
	b.WriteString("      \"required\": " + strings.ReplaceAll(string(keys), ",", ", ") + ",\n")
	b.WriteString("      \"properties\": {\n")
	for i, d := range Defs {
		desc, _ := json.Marshal(d.Summary)
		b.WriteString("        \"" + d.Key + "\": {\"type\": \"number\", \"minimum\": 0, \"description\": " + string(desc) + "}")
		if i+1 < len(Defs) {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("      }\n")
	b.WriteString("    },\n")
	b.WriteString(whyPartStart + "{\"enum\": " + strings.ReplaceAll(string(keys), ",", ", ") + "}")
	return b.String()
}

// The generated entries run, inside $defs, from whyDefsStart to the end of the line whyPartStart
// begins.
const (
	whyDefsStart = "    \"why\": {\n"
	whyPartStart = "    \"why_part\": "
)

// TestSchemaParts: the record schema's parts are why.Defs (rewritten with -update), and a record's
// "why" as Parts writes it validates.
func TestSchemaParts(t *testing.T) {
	raw, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	d := bytes.LastIndex(raw, []byte("  \"$defs\": {"))
	i := bytes.Index(raw[max(d, 0):], []byte(whyDefsStart)) + d
	k := bytes.Index(raw[max(d, 0):], []byte(whyPartStart)) + d
	if d < 0 || i < d || k < i {
		t.Fatalf("%s: no generated \"why\" and \"why_part\" in its $defs", schemaFile)
	}
	j := k + bytes.IndexByte(raw[k:], '\n')
	if j < k {
		t.Fatalf("%s: \"why_part\" is its last line", schemaFile)
	}
	want := append(append(append([]byte{}, raw[:i]...), whyDefs()...), raw[j:]...)
	if !bytes.Equal(raw, want) {
		if *update {
			if err := os.WriteFile(schemaFile, want, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s rewritten", schemaFile)
		} else {
			t.Fatalf("%s's $defs are not why.Defs: go test ./why -run TestSchemaParts -update", schemaFile)
		}
	}
	if !bytes.Equal(contract.Raw(contract.LoadRecord), want) {
		t.Fatalf("the embedded schema differs from %s (rebuild)", schemaFile)
	}
	var doc struct {
		Defs struct {
			Why struct {
				Properties map[string]any `json:"properties"`
			} `json:"why"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(want, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Defs.Why.Properties) != int(NumParts) {
		t.Fatalf("%d parts in the schema, %d in Defs", len(doc.Defs.Why.Properties), NumParts)
	}
}

func TestPartsJSON(t *testing.T) {
	var p Parts
	for i := range p {
		p[i] = float64(i) + 0.0004 // rounds to the µs
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"dns_ms":0,"setup_ms":1,`) {
		t.Fatalf("order or rounding: %s", b)
	}
	var q Parts
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	for i := range q {
		if q[i] != float64(i) {
			t.Fatalf("round trip: %v", q)
		}
	}
	for _, bad := range []string{`{"dns_ms":1}`, `{"nope_ms":1,` + string(b[1:])} {
		if err := json.Unmarshal([]byte(bad), &q); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	var pt Part
	if err := json.Unmarshal([]byte(`"hol_ms"`), &pt); err != nil || pt != HoL {
		t.Fatalf("part: %v %v", pt, err)
	}
}
