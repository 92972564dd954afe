package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestBenchJSON: a benchmark's fields first, then the run's provenance, as one object; an empty
// result and a result that is not an object.
func TestBenchJSON(t *testing.T) {
	started := time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC)
	type result struct {
		Pages float64 `json:"pages_per_s"`
		Rows  []int   `json:"rows"`
	}
	b, err := benchJSON(&result{Pages: 12.5, Rows: []int{1, 2}}, started)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if got["pages_per_s"] != 12.5 || len(got["rows"].([]any)) != 2 || got["started_at"] != "2026-11-25T16:00:00Z" ||
		got["command"] == "" || got["engine"] == "" {
		t.Errorf("%s", b)
	}
	if strings.Index(string(b), `"rows"`) > strings.Index(string(b), `"command"`) {
		t.Errorf("provenance before the result's fields: %s", b)
	}
	b, err = benchJSON(struct{}{}, started)
	var empty map[string]any
	if err != nil || json.Unmarshal(b, &empty) != nil || len(empty) != 3 {
		t.Errorf("empty result: %v %s", err, b)
	}
	if _, err := benchJSON([]int{1}, started); err == nil {
		t.Error("a list accepted as a result")
	}
}
