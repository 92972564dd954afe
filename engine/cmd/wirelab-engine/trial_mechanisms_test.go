package main

// Root tests of issue 7's mechanisms through `wirelab-engine trial`: spdy3 beside h2, server push
// and request priorities, each through the emulated path with serve and fetch as the trial runs
// them. The checks are the issue's: exact objects and bytes over spdy3; with push "all" no request
// for a pushed object and pushed bytes equal to the pushed objects' sizes; dependency-level:1
// pushes fewer bytes than embedding-level on a page whose graph makes that so.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/trial"
)

// harEntry is a HAR entry with the fields the tests read (the loaders' extensions among them).
type harEntry struct {
	Request struct {
		URL string `json:"url"`
	} `json:"request"`
	Connection     string `json:"connection"`
	Protocol       string `json:"_protocol"`
	WasPushed      int    `json:"_was_pushed"`
	PrioritySignal string `json:"_priority_signal"`
}

func harEntries(t *testing.T, path string) []harEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Log struct {
			Entries []harEntry `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h.Log.Entries
}

// serverRecords reads serve's request records (server/requests.jsonl) of a trial, by load token.
func serverRecords(t *testing.T, dir string) map[string][]server.Record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, trial.ServerReqs))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]server.Record{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r server.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out[r.Token] = append(out[r.Token], r)
	}
	return out
}

// tokenOf is the load token of a load URL (…/L/<token>/…).
func tokenOf(t *testing.T, u string) string {
	t.Helper()
	_, rest, ok := strings.Cut(u, "/L/")
	tok, _, _ := strings.Cut(rest, "/")
	if !ok || tok == "" {
		t.Fatalf("%s: no load token", u)
	}
	return tok
}

// spdy3 beside h2 with the chrome priority policy: every object once with exact bytes over one TLS
// connection per origin negotiated as spdy/3.1, each request's SPDY priority that of its type (the
// server's records), and the policy in the record.
func TestTrialSPDY3(t *testing.T) {
	roottest.RequireTUN(t)
	const shards = 2
	pg, err := page.Load("youtube", 1)
	if err != nil {
		t.Fatal(err)
	}
	served, err := pg.Shard(shards, page.ShardRoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]page.Type{} // by object id
	for _, o := range served.Objects {
		types[o.ID] = o.Type
	}
	dir := runTrialOK(t, fmt.Sprintf(`{"page":"youtube","shards":%d,"protocols":["spdy3","h2"],"repetitions":2,"network":"rtt=20ms","client":{"priority":"chrome"}}`, shards), 3*time.Minute)
	td := readTrial(t, dir)
	records := serverRecords(t, dir)
	td.wantLoads(t, 4)
	for _, l := range td.loads {
		if l.Error != nil {
			t.Fatalf("%s: %s", l.Protocol, *l.Error)
		}
		checkWholePage(t, l.Protocol, l, pg)
		if l.Connections != shards || l.TLSHandshakes != shards {
			t.Errorf("%s: %d connections, %d TLS handshakes; want one of each per origin (%d)", l.Protocol, l.Connections, l.TLSHandshakes, shards)
		}
		if l.Client["priority"] != "chrome" {
			t.Errorf("%s: client.priority %v", l.Protocol, l.Client["priority"])
		}
		entries := harEntries(t, filepath.Join(dir, *l.HAR))
		wantProto := map[string]string{"spdy3": "spdy/3.1", "h2": "h2"}[l.Protocol]
		for _, e := range entries {
			if e.Protocol != wantProto || e.PrioritySignal == "" {
				t.Errorf("%s: HAR entry %s: _protocol %q, _priority_signal %q", l.Protocol, e.Request.URL, e.Protocol, e.PrioritySignal)
			}
		}
		recs := records[tokenOf(t, entries[0].Request.URL)]
		if len(recs) != len(pg.Objects) {
			t.Fatalf("%s: the server answered %d requests, want %d", l.Protocol, len(recs), len(pg.Objects))
		}
		for _, r := range recs {
			if string(r.Protocol) != l.Protocol {
				t.Errorf("%s load: the server served %s over %s", l.Protocol, r.Path, r.Protocol)
			}
			want := "u=2"
			switch types[r.Object] {
			case page.TypeHTML:
				want = "u=0"
			case page.TypeCSS, page.TypeJS:
				want = "u=1"
			}
			if r.Priority != want {
				t.Errorf("%s: %s (%s) signalled %q, want %q", l.Protocol, r.Path, types[r.Object], r.Priority, want)
			}
		}
	}
}

// server.push = all over h2, h2c and spdy3 on a page sharded over two origins: the root's origin
// pushes its other objects with the root, the client sends no request for them (the server
// answered only the root and the other origin's objects as requests), every push is used, and the
// record's pushed_bytes are the pushed objects' sizes.
func TestTrialPushAll(t *testing.T) {
	roottest.RequireTUN(t)
	pg, err := page.Load("youtube", 1)
	if err != nil {
		t.Fatal(err)
	}
	served, err := pg.Shard(2, page.ShardRoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	pushed := map[string]bool{} // by object id
	var pushedBytes int64
	for _, o := range served.Objects[1:] {
		if o.Origin == served.Objects[0].Origin {
			pushed[o.ID] = true
			pushedBytes += o.Size
		}
	}
	if len(pushed) == 0 || len(pushed) == len(pg.Objects)-1 {
		t.Fatalf("%d of %d objects on the root's origin: the test needs some on each", len(pushed), len(pg.Objects)-1)
	}
	dir := runTrialOK(t, `{"page":"youtube","shards":2,"protocols":["h2","h2c","spdy3"],"repetitions":1,"network":"rtt=20ms","server":{"push":"all"}}`, 3*time.Minute)
	td := readTrial(t, dir)
	records := serverRecords(t, dir)
	for _, l := range td.loads {
		if l.Error != nil {
			t.Fatalf("%s: %s", l.Protocol, *l.Error)
		}
		checkWholePage(t, l.Protocol, l, pg)
		t.Logf("%s: pushed_bytes %d, pushes_used %d, pushes_unused %d, plt %.1f ms", l.Protocol, l.PushedBytes, l.PushesUsed, l.PushesUnused, l.PltMs)
		if l.PushedBytes != pushedBytes || l.PushesUsed != int64(len(pushed)) || l.PushesUnused != 0 {
			t.Errorf("%s: pushed %d bytes, %d used, %d unused; want %d bytes, %d used, 0 unused",
				l.Protocol, l.PushedBytes, l.PushesUsed, l.PushesUnused, pushedBytes, len(pushed))
		}
		entries := harEntries(t, filepath.Join(dir, *l.HAR))
		marked := 0
		for _, e := range entries {
			if e.WasPushed == 1 {
				marked++
			}
		}
		if marked != len(pushed) {
			t.Errorf("%s: %d HAR entries with _was_pushed, want %d", l.Protocol, marked, len(pushed))
		}
		requested, promised := 0, 0
		for _, r := range records[tokenOf(t, entries[0].Request.URL)] {
			switch {
			case r.Pushed && !pushed[r.Object]:
				t.Errorf("%s: pushed %s, not of the root's origin", l.Protocol, r.Path)
			case r.Pushed:
				promised++
			case pushed[r.Object]:
				t.Errorf("%s: %s was requested although pushed", l.Protocol, r.Path)
			default:
				requested++
			}
		}
		if promised != len(pushed) || requested != len(pg.Objects)-len(pushed) {
			t.Errorf("%s: the server pushed %d and answered %d requests; want %d and %d", l.Protocol, promised, requested, len(pushed), len(pg.Objects)-len(pushed))
		}
	}
}

// dependency-level:1 pushes fewer bytes than embedding-level on a page whose graph makes that so:
// twitter with its structural graph (pages show --graph structural), where the image a stylesheet
// owns and the body image behind the scripts are at depth 2. Each pushes exactly its policy's
// objects and the rest are requested.
func TestTrialPushByLevel(t *testing.T) {
	roottest.RequireTUN(t)
	pg, err := page.Load("twitter", 1)
	if err != nil {
		t.Fatal(err)
	}
	pg.Activities = page.BuildGraph(pg)
	file := filepath.Join(t.TempDir(), "twitter-structural.json")
	if err := os.WriteFile(file, pg.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	served, err := pg.Shard(1, page.ShardRoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, policy := range []string{"embedding-level", "dependency-level:1"} {
		p, err := server.ParsePushPolicy(policy)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range p.Objects(served) {
			want[policy] += served.Objects[i].Size
		}
	}
	if want["dependency-level:1"] >= want["embedding-level"] {
		t.Fatalf("the structural graph no longer makes dependency-level:1 push less: %v", want)
	}
	got := map[string]int64{}
	for policy := range want {
		dir := runTrialOK(t, fmt.Sprintf(`{"page":%q,"protocols":["h2"],"repetitions":1,"network":"rtt=20ms","server":{"push":%q}}`, file, policy), 2*time.Minute)
		l := readTrial(t, dir).loads[0]
		if l.Error != nil {
			t.Fatalf("%s: %s", policy, *l.Error)
		}
		if l.Objects != int64(len(pg.Objects)) || l.BodyBytes != pg.TotalBytes() || l.PushesUnused != 0 {
			t.Errorf("%s: %d objects, %d body bytes, %d pushes unused", policy, l.Objects, l.BodyBytes, l.PushesUnused)
		}
		got[policy] = l.PushedBytes
	}
	t.Logf("pushed bytes: %v", got)
	if got["embedding-level"] != want["embedding-level"] || got["dependency-level:1"] != want["dependency-level:1"] {
		t.Errorf("pushed bytes %v, want %v", got, want)
	}
}
