package har

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/wirelab/wirelab/engine/internal/hartest"
)

func sampleLog() *Log {
	start := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	tm := NewTimings()
	tm.DNS, tm.Connect, tm.SSL, tm.Send, tm.Wait, tm.Receive = 1.5, 60.2, 40.1, 0.1, 30.5, 12.25
	reused := NewTimings()
	reused.Blocked, reused.Send, reused.Wait, reused.Receive = 2, 0.05, 31, 4
	return &Log{
		Creator: Creator{Name: "wirelab-engine", Version: "test"},
		Pages: []Page{{StartedDateTime: start, ID: "load-0", Title: "twitter h2 #0",
			PageTimings: PageTimings{OnContentLoad: -1, OnLoad: 150.3}}},
		Entries: []Entry{
			{Pageref: "load-0", StartedDateTime: start,
				Request: Request{Method: "GET", URL: "https://s1.wirelab.test/L/tok/", HTTPVersion: "h2", HeadersSize: -1, BodySize: 0,
					Headers: []NameValue{{Name: ":authority", Value: "s1.wirelab.test"}}},
				Response: Response{Status: 200, StatusText: "OK", HTTPVersion: "h2", HeadersSize: -1, BodySize: 54334,
					Content: Content{Size: 54334, MimeType: "text/html; charset=utf-8"}},
				Timings: tm, ServerIPAddress: "10.77.1.1", ConnectionID: "1", Protocol: "h2", StreamID: Stream(1)},
			{Pageref: "load-0", StartedDateTime: start.Add(105 * time.Millisecond),
				Request:  Request{Method: "GET", URL: "https://s1.wirelab.test/L/tok/css/o1.css", HTTPVersion: "h2", HeadersSize: -1, BodySize: 0},
				Response: Response{Status: 200, StatusText: "OK", HTTPVersion: "h2", HeadersSize: -1, BodySize: 60932, Content: Content{Size: 60932, MimeType: "text/css"}},
				Timings:  reused, ServerIPAddress: "10.77.1.1", ConnectionID: "1", Protocol: "h2", StreamID: Stream(3)},
		},
	}
}

func TestWriteValidatesAgainstHAR12Schema(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sampleLog()); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := hartest.Schema(t).Validate(inst); err != nil {
		t.Fatalf("HAR does not validate: %v\n%s", err, buf.String())
	}
	// an empty log is valid too
	buf.Reset()
	if err := Write(&buf, &Log{Creator: Creator{Name: "x", Version: "1"}}); err != nil {
		t.Fatal(err)
	}
	inst, _ = jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
	if err := hartest.Schema(t).Validate(inst); err != nil {
		t.Fatalf("empty HAR does not validate: %v", err)
	}
}

// The schema is not vacuous: it rejects an entry without timings and a wrong type.
func TestSchemaRejectsBrokenHAR(t *testing.T) {
	s := hartest.Schema(t)
	var buf bytes.Buffer
	if err := Write(&buf, sampleLog()); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(buf.Bytes(), &doc)
	entry := doc["log"].(map[string]any)["entries"].([]any)[0].(map[string]any)
	delete(entry, "timings")
	data, _ := json.Marshal(doc)
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err := s.Validate(inst); err == nil {
		t.Fatal("schema accepted an entry without timings")
	}
	entry["timings"] = map[string]any{"send": 0, "wait": 0, "receive": 0}
	entry["startedDateTime"] = "yesterday"
	data, _ = json.Marshal(doc)
	inst, _ = jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err := s.Validate(inst); err == nil {
		t.Fatal("schema accepted a bad startedDateTime")
	}
}

func TestExtensionsAndDerivedFields(t *testing.T) {
	var buf bytes.Buffer
	l := sampleLog()
	if err := Write(&buf, l); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Log struct {
			Version string           `json:"version"`
			Entries []map[string]any `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Log.Version != "1.2" {
		t.Errorf("version %q", doc.Log.Version)
	}
	e := doc.Log.Entries[0]
	if e["_connection"] != "1" || e["connection"] != "1" || e["_protocol"] != "h2" || e["_stream_id"] != 1.0 {
		t.Errorf("extensions: %v", e)
	}
	// time = blocked(-1 skipped) + dns + connect (ssl inside) + send + wait + receive
	if want := 1.5 + 60.2 + 0.1 + 30.5 + 12.25; math.Abs(e["time"].(float64)-want) > 1e-9 {
		t.Errorf("time %v, want %v", e["time"], want)
	}
	tm := e["timings"].(map[string]any)
	if tm["blocked"] != -1.0 || tm["ssl"] != 40.1 {
		t.Errorf("timings %v", tm)
	}
	if !strings.Contains(buf.String(), `"startedDateTime": "2026-01-02T03:04:05.678Z"`) {
		t.Error("startedDateTime is not ISO 8601 with milliseconds")
	}
}

func TestTimingsValidate(t *testing.T) {
	bad := []func(*Timings){
		func(t *Timings) { t.Send = -1 },
		func(t *Timings) { t.DNS = -2 },
		func(t *Timings) { t.Connect, t.SSL = 10, 20 },
	}
	for i, mutate := range bad {
		tm := NewTimings()
		mutate(&tm)
		if tm.Validate() == nil {
			t.Errorf("case %d accepted: %+v", i, tm)
		}
		l := sampleLog()
		l.Entries[1].Timings = tm
		if err := Write(&bytes.Buffer{}, l); err == nil || !strings.HasPrefix(err.Error(), "har: entries[1].timings.") {
			t.Errorf("case %d: Write error %v", i, err)
		}
	}
}
