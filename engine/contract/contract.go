// Package contract is the one definition of what crosses wirelab's process boundaries: the JSON
// Schemas of the trial spec, the load record, trial.json, the page, the load test's spec and the
// probe record (schemas/*.schema.json,
// embedded here; the repository's schemas/ is a link to this directory, so the control plane reads
// the same files). The engine validates its input against them and takes every default from them;
// the control plane's models are generated from them (wirelab/_contract_models.py).
//
// Validate reports the first problem as a *fielderr.Error that names the field, the value and what
// is allowed. What is allowed is the schema's own words: the annotation "x-allowed" on a
// property (or on an if/then branch, with "x-field" naming the field it is about), else a
// description derived from the property's type, range or enumeration.
package contract

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

//go:embed schemas/*.schema.json
var files embed.FS

// Schema names: files schemas/<name>.schema.json, each with the $id urn:wirelab:schema:<name>:1.
const (
	TrialSpec   = "trial-spec"
	LoadRecord  = "load-record"
	TrialResult = "trial-result"
	Page        = "page"
	// LoadtestSpec is the input of `wirelab-engine loadgen` (docs/loadtest.md); its lab fields
	// refer to trial-spec's.
	LoadtestSpec = "loadtest-spec"
	// ProbeRecord is one line of `wirelab-engine probe` (engine/probe.Record; docs/probe.md).
	ProbeRecord = "probe-record"
)

// Names lists every schema of the contract.
var Names = []string{TrialSpec, LoadRecord, TrialResult, Page, LoadtestSpec, ProbeRecord}

// Raw returns the schema file's bytes.
func Raw(name string) []byte {
	b, err := files.ReadFile("schemas/" + name + ".schema.json")
	if err != nil {
		panic(fmt.Sprintf("contract: no schema %q", name))
	}
	return b
}

type compiled struct {
	schemas map[string]*jsonschema.Schema
	docs    map[string]any // parsed schema documents by $id, for annotations
	ids     map[string]string
}

var (
	once    sync.Once
	loaded  *compiled
	loadErr error
)

func load() (*compiled, error) {
	once.Do(func() {
		c := jsonschema.NewCompiler()
		out := &compiled{schemas: map[string]*jsonschema.Schema{}, docs: map[string]any{}, ids: map[string]string{}}
		for _, name := range Names {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Raw(name)))
			if err != nil {
				loadErr = fmt.Errorf("contract: %s: %w", name, err)
				return
			}
			id, _ := doc.(map[string]any)["$id"].(string)
			if id == "" {
				loadErr = fmt.Errorf("contract: %s: no $id", name)
				return
			}
			if err := c.AddResource(id, doc); err != nil {
				loadErr = fmt.Errorf("contract: %s: %w", name, err)
				return
			}
			out.docs[id], out.ids[name] = doc, id
		}
		for _, name := range Names {
			s, err := c.Compile(out.ids[name])
			if err != nil {
				loadErr = fmt.Errorf("contract: compile %s: %w", name, err)
				return
			}
			out.schemas[name] = s
		}
		loaded = out
	})
	return loaded, loadErr
}

// Decode parses one JSON value strictly (numbers kept as json.Number, nothing after the value):
// the form Validate and ApplyDefaults work on. field names the input in errors ("spec").
func Decode(field string, data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &fielderr.Error{Field: field, Allowed: "invalid JSON: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &fielderr.Error{Field: field, Allowed: "invalid JSON: text after the value"}
	}
	if err := finite(v, v, nil); err != nil {
		return nil, err
	}
	return v, nil
}

// finite refuses a number no float64 holds (1e999): every number of the contract is finite, and a
// value that would become ±Inf is bad input, named by its path (the first in key order, so the same
// input always gets the same message). root is the whole value, for the path's rendering.
func finite(root, v any, path []string) error {
	if x, ok := v.(json.Number); ok {
		if f, err := strconv.ParseFloat(x.String(), 64); err != nil || math.IsInf(f, 0) {
			return &fielderr.Error{Field: fieldPath(root, path), Value: fielderr.Cut(x.String()), Allowed: "must be a finite number"}
		}
	}
	for step, e := range members(v) {
		if err := finite(root, e, append(path[:len(path):len(path)], step)); err != nil {
			return err
		}
	}
	return nil
}

// members are a JSON value's members with their path steps: an object's in key order, an array's
// by index; none for any other value.
func members(v any) iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if !yield(k, x[k]) {
					return
				}
			}
		case []any:
			for i, e := range x {
				if !yield(strconv.Itoa(i), e) {
					return
				}
			}
		}
	}
}

// Validate checks a decoded value (Decode's form, or any JSON-shaped Go value) against the named
// schema and returns its first problem as a *fielderr.Error.
func Validate(name string, v any) error {
	c, err := load()
	if err != nil {
		return err
	}
	s, ok := c.schemas[name]
	if !ok {
		return fmt.Errorf("contract: no schema %q", name)
	}
	inst, err := normalise(v)
	if err != nil {
		return err
	}
	verr := s.Validate(inst)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return verr
	}
	return c.explain(ve, inst)
}

// normalise turns v into the value model of the validator (maps, slices, json.Number, strings,
// bools, nil) by a JSON round trip unless it already is one.
func normalise(v any) (any, error) {
	if isJSONModel(v) {
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

func isJSONModel(v any) bool {
	switch v.(type) {
	case nil, bool, string, json.Number:
		return true
	case map[string]any, []any:
		for _, e := range members(v) {
			if !isJSONModel(e) {
				return false
			}
		}
		return true
	}
	return false
}

// ApplyDefaults fills every absent property that has a "default" in the named schema, in v and in
// the objects it holds (objects are entered when present or when their own default brings them).
func ApplyDefaults(name string, v any) error {
	c, err := load()
	if err != nil {
		return err
	}
	root := c.docs[c.ids[name]]
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	c.fill(c.ids[name], root, m)
	return nil
}

// fill applies the defaults of schema node s (within document id) to the object m.
func (c *compiled) fill(id string, s any, m map[string]any) {
	for _, sub := range c.branches(id, s) {
		props, _ := sub.node["properties"].(map[string]any)
		for key, ps := range props {
			if _, present := m[key]; !present {
				if d, ok := c.annotation(sub.id, ps, "default"); ok {
					m[key] = deepCopy(d)
				}
			}
			if child, ok := m[key].(map[string]any); ok {
				c.fill(sub.id, ps, child)
			}
		}
	}
}

type located struct {
	id   string
	node map[string]any
}

// branches returns s and the schemas it refers to with $ref (the nodes whose properties apply to
// the same instance), following references across documents.
func (c *compiled) branches(id string, s any) []located {
	var out []located
	seen := map[string]bool{}
	for n, nid := s, id; ; {
		m, ok := n.(map[string]any)
		if !ok {
			break
		}
		out = append(out, located{nid, m})
		ref, ok := m["$ref"].(string)
		if !ok || seen[nid+ref] {
			break
		}
		seen[nid+ref] = true
		n, nid = c.resolve(nid, ref)
	}
	return out
}

// annotation returns the first value of key in node s or the schemas it refers to.
func (c *compiled) annotation(id string, s any, key string) (any, bool) {
	for _, b := range c.branches(id, s) {
		if v, ok := b.node[key]; ok {
			return v, true
		}
	}
	return nil, false
}

// resolve finds the node a reference names: "#/$defs/x" in document id, or "urn:…#/…".
func (c *compiled) resolve(id, ref string) (any, string) {
	doc, frag := id, ref
	if i := strings.IndexByte(ref, '#'); i >= 0 {
		if i > 0 {
			doc = ref[:i]
		}
		frag = ref[i+1:]
	} else {
		doc, frag = ref, ""
	}
	return pointer(c.docs[doc], frag), doc
}

// pointer evaluates a JSON pointer (RFC 6901) in a decoded document.
func pointer(doc any, ptr string) any {
	if ptr == "" || ptr == "/" {
		return doc
	}
	n := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := n.(type) {
		case map[string]any:
			n = x[tok]
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(x) {
				return nil
			}
			n = x[i]
		default:
			return nil
		}
	}
	return n
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

// Property returns the schema node of a property path (["server", "impl"]) below the named
// schema's root, merged with the schemas it refers to: what a field's type, range, default and
// annotations are.
func Property(name string, path ...string) (map[string]any, error) {
	c, id, node, err := locate(name, path)
	if err != nil {
		return nil, err
	}
	return c.merged(id, node), nil
}

// Properties lists the property names of the object at path (sorted).
func Properties(name string, path ...string) ([]string, error) {
	c, id, node, err := locate(name, path)
	if err != nil {
		return nil, err
	}
	return c.propertyNames(id, node), nil
}

// locate loads the contract and finds the schema node at path below the named schema's root.
func locate(name string, path []string) (c *compiled, id string, node any, err error) {
	if c, err = load(); err != nil {
		return nil, "", nil, err
	}
	id, node, err = c.locate(name, path)
	return c, id, node, err
}

func (c *compiled) locate(name string, path []string) (string, any, error) {
	nid, ok := c.ids[name]
	if !ok {
		return "", nil, fmt.Errorf("contract: no schema %q", name)
	}
	node := any(c.docs[nid])
	for _, key := range path {
		var next any
		for _, b := range c.branches(nid, node) {
			if props, ok := b.node["properties"].(map[string]any); ok && props[key] != nil {
				next, nid = props[key], b.id
				break
			}
		}
		if next == nil {
			return "", nil, fmt.Errorf("contract: %s has no property %s", name, strings.Join(path, "."))
		}
		node = next
	}
	return nid, node, nil
}

func (c *compiled) propertyNames(id string, node any) []string {
	set := map[string]bool{}
	for _, b := range c.branches(id, node) {
		for k := range asMap(b.node["properties"]) {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// merged is node with the keys of the schemas it refers to added (the node's own keys win).
func (c *compiled) merged(id string, node any) map[string]any {
	out := map[string]any{}
	bs := c.branches(id, node)
	for i := len(bs) - 1; i >= 0; i-- {
		for k, v := range bs[i].node {
			out[k] = v
		}
	}
	delete(out, "$ref")
	return out
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
