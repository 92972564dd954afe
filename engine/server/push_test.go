package server

import (
	"slices"
	"testing"

	"golang.org/x/net/http2"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/page/pagetest"
)

func TestParsePushPolicy(t *testing.T) {
	for _, s := range []string{"none", "all", "embedding-level", "dependency-level:1", "dependency-level:12"} {
		p, err := ParsePushPolicy(s)
		if err != nil || p.String() != s {
			t.Errorf("%q: %+v %v", s, p, err)
		}
	}
	if p, err := ParsePushPolicy(""); err != nil || p.Kind != PushNone {
		t.Errorf(`"": %+v %v`, p, err)
	}
	for _, s := range []string{"some", "dependency-level", "dependency-level:0", "dependency-level:-1", "dependency-level:01", "dependency-level:x", "All"} {
		if _, err := ParsePushPolicy(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestPushPolicyObjects: what each policy pushes for twitter with its structural graph, and that
// other origins' objects are never pushed.
func TestPushPolicyObjects(t *testing.T) {
	pg := pagetest.Structural(t)
	ids := func(idx []int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, pg.Objects[i].ID)
		}
		return out
	}
	var head, ownedByCSS, body []string
	for _, o := range pg.Objects[1:] {
		switch {
		case o.Type != page.TypeImage:
			head = append(head, o.ID)
		case o.Parent != "":
			ownedByCSS = append(ownedByCSS, o.ID)
		default:
			body = append(body, o.ID)
		}
	}
	all := ids([]int{1, 2, 3, 4, 5, 6})
	for _, c := range []struct {
		policy string
		want   []string
	}{
		{"none", nil},
		{"all", all},
		{"embedding-level", append(slices.Clone(head), body...)},
		{"dependency-level:1", head},
		{"dependency-level:2", all},
	} {
		p, _ := ParsePushPolicy(c.policy)
		got := ids(p.Objects(pg))
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: pushes %v, want %v", c.policy, got, want)
		}
	}
	if len(ownedByCSS) != 1 {
		t.Fatalf("twitter changed: %d images owned by a CSS", len(ownedByCSS))
	}
	sharded, err := pg.Shard(2, page.ShardRoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := ParsePushPolicy("all")
	for _, i := range p.Objects(sharded) {
		if sharded.Objects[i].Origin != 0 {
			t.Errorf("pushes %s of origin %d with the root", sharded.Objects[i].ID, sharded.Objects[i].Origin)
		}
	}
	if n := len(p.Objects(sharded)); n != 3 {
		t.Errorf("sharded over 2: pushes %d objects, want the root's origin's 3", n)
	}
}

// TestPushH2: over h2 and h2c the server promises the policy's objects on the root's stream
// before any of the root's DATA, in page order, and delivers each pushed body whole; the records
// say which responses were pushed. A client with SETTINGS_ENABLE_PUSH 0 gets no push.
func TestPushH2(t *testing.T) {
	pg, _ := page.Load("twitter", 1)
	for _, policy := range []string{"all", "dependency-level:1"} {
		p, _ := ParsePushPolicy(policy)
		s := startTest(t, pg, func(c *Config) { c.Push = p })
		want := p.Objects(pg)
		for _, proto := range []Protocol{H2, H2C} {
			s.ResetRecords()
			c := dialRawH2(t, s, proto, http2.Setting{ID: http2.SettingEnablePush, Val: 1})
			c.get(1, "/L/push/")
			var promised []string
			pushedBytes := map[uint32]int{}
			open := map[uint32]bool{1: true}
			rootData := false
			for len(open) > 0 {
				switch f := c.next().(type) {
				case *http2.PushPromiseFrame:
					if rootData {
						t.Errorf("%s %s: PUSH_PROMISE after the root's DATA", policy, proto)
					}
					if f.StreamID != 1 || f.PromiseID%2 != 0 {
						t.Errorf("%s %s: PUSH_PROMISE on stream %d promising %d", policy, proto, f.StreamID, f.PromiseID)
					}
					promised = append(promised, c.promisedPath(f))
					open[f.PromiseID] = true
				case *http2.DataFrame:
					if f.StreamID == 1 {
						rootData = true
					} else {
						pushedBytes[f.StreamID] += len(f.Data())
					}
					if f.StreamEnded() {
						delete(open, f.StreamID)
					}
				case *http2.MetaHeadersFrame:
					if f.StreamEnded() {
						delete(open, f.StreamID)
					}
				case *http2.RSTStreamFrame, *http2.GoAwayFrame:
					t.Fatalf("%s %s: %v", policy, proto, f)
				}
			}
			var wantPaths []string
			var wantBytes int64
			for _, i := range want {
				wantPaths = append(wantPaths, "/L/push"+pg.Objects[i].Path)
				wantBytes += pg.Objects[i].Size
			}
			total := 0
			for _, n := range pushedBytes {
				total += n
			}
			if !slices.Equal(promised, wantPaths) || int64(total) != wantBytes {
				t.Errorf("%s %s: promised %v (%d bytes), want %v (%d bytes)", policy, proto, promised, total, wantPaths, wantBytes)
			}
			recs, _ := s.Records()
			pushed, pushes := 0, -1
			for _, r := range recs {
				if r.Pushed {
					pushed++
					if r.Stream%2 != 0 || r.Status != 200 {
						t.Errorf("%s %s: pushed record %+v", policy, proto, r)
					}
				}
				if r.Object == pg.Objects[0].ID {
					pushes = r.Pushes
				}
			}
			if pushed != len(want) || pushes != len(want) {
				t.Errorf("%s %s: %d pushed records, root says %d pushes; want %d", policy, proto, pushed, pushes, len(want))
			}
		}
		// Push disabled by the client: nothing is promised, the root says 0.
		s.ResetRecords()
		c := dialRawH2(t, s, H2, http2.Setting{ID: http2.SettingEnablePush, Val: 0})
		c.get(1, "/L/nopush/")
		for done := false; !done; {
			switch f := c.next().(type) {
			case *http2.PushPromiseFrame:
				t.Fatalf("%s: PUSH_PROMISE although push is disabled", policy)
			case *http2.DataFrame:
				done = f.StreamID == 1 && f.StreamEnded()
			}
		}
		recs, _ := s.Records()
		if len(recs) != 1 || recs[0].Pushes != 0 || recs[0].Pushed {
			t.Errorf("%s: push disabled: records %+v", policy, recs)
		}
		s.Close()
	}
}
