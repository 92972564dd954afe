package page

import (
	"strings"
	"testing"
)

func TestSyntheticNames(t *testing.T) {
	cases := []struct {
		name  string
		count int
		size  int64
		root  int64 // 0: not checked
	}{
		{"synthetic:64x10kB", 64, 10000, 0},
		{"synthetic:2x100B", 2, 100, 1000},
		{"synthetic:8x1KiB", 8, 1024, 0},
		{"synthetic:1x2MB", 1, 2_000_000, 1000},
		{"synthetic:3x1.5kB", 3, 1500, 0},
		{"synthetic:0x1kB", 0, 0, 1000},
		{"synthetic:0x1B,html=1kB", 0, 0, 1000},
		{"synthetic:4x1MiB,html=20kB", 4, 1 << 20, 20000},
	}
	for _, c := range cases {
		p, err := Synthetic(c.name, 1)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(p.Objects) != c.count+1 {
			t.Errorf("%s: %d objects, want %d + root", c.name, len(p.Objects), c.count)
		}
		for _, o := range p.Objects[1:] {
			if o.Size != c.size || o.Type != TypeImage {
				t.Errorf("%s: object %s is %d bytes of %s", c.name, o.ID, o.Size, o.Type)
			}
		}
		if c.root != 0 && p.Objects[0].Size != c.root {
			t.Errorf("%s: root %d bytes, want %d", c.name, p.Objects[0].Size, c.root)
		}
	}
	// 512 references do not fit in 1000 bytes: the root grows to hold them
	p, err := Synthetic("synthetic:512x100B", 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Objects[0].Size != MinSize(p, 0) || p.Objects[0].Size <= 1000 {
		t.Fatalf("root of 512 objects: %d bytes (min %d)", p.Objects[0].Size, MinSize(p, 0))
	}
	for _, bad := range []string{"synthetic:", "synthetic:10", "synthetic:10x", "synthetic:10x5", "synthetic:10x5GB",
		"synthetic:-1x1kB", "synthetic:5000x1kB", "synthetic:2x0B", "synthetic:2x1.5B", "synthetic:64x10kB,html=1kB", "synthetic:2x2GiB"} {
		_, err := Synthetic(bad, 1)
		fe, ok := AsFieldError(err)
		if !ok || fe.Field != "page" {
			t.Errorf("%s: %v, want a FieldError on page", bad, err)
		}
	}
}

func TestWGrid(t *testing.T) {
	names := WGrid()
	if len(names) != len(WGridSizes)*len(WGridCounts) {
		t.Fatalf("%d names", len(names))
	}
	if names[0] != "synthetic:2x100B" || names[len(names)-1] != "synthetic:512x1MB" {
		t.Fatalf("grid runs %s … %s", names[0], names[len(names)-1])
	}
	for _, n := range names {
		p, err := Synthetic(n, 1)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if SyntheticName(len(p.Objects)-1, p.Objects[1].Size) != n {
			t.Fatalf("%s does not round-trip", n)
		}
	}
}

func TestShardRoundRobin(t *testing.T) {
	p := mustCorpus(t, "youtube", 1) // 49 objects besides the root
	for _, n := range []int{1, 2, 3, 7, 49} {
		s, err := p.Shard(n, ShardRoundRobin)
		if err != nil {
			t.Fatalf("%d shards: %v", n, err)
		}
		counts := s.ObjectsPerOrigin()
		if len(counts) != n || len(s.Origins) != n {
			t.Fatalf("%d shards: %d origins", n, len(counts))
		}
		for k := range counts {
			want := 49 / n
			if k < 49%n {
				want++
			}
			if k == 0 {
				want++ // the root
			}
			if counts[k] != want {
				t.Errorf("%d shards: origin %d serves %d objects, want %d", n, k+1, counts[k], want)
			}
		}
		if s.Objects[0].Origin != 0 || (n > 1 && s.Objects[2].Origin != 1) {
			t.Errorf("%d shards: assignment is not round robin", n)
		}
		if p.Objects[2].Origin != 0 {
			t.Fatal("Shard modified its receiver")
		}
		html := string(body(t, s, 0, bases[1]))
		for k := 1; k <= n; k++ {
			if !strings.Contains(html, "https://"+OriginHost(k-1)+"/L/") {
				t.Errorf("%d shards: the HTML never references %s", n, OriginHost(k-1))
			}
		}
		if n < 64 && strings.Contains(html, OriginHost(n)) {
			t.Errorf("%d shards: the HTML references %s", n, OriginHost(n))
		}
	}
	for _, n := range []int{0, -1, 50, 65} {
		_, err := p.Shard(n, ShardRoundRobin)
		if fe, ok := AsFieldError(err); !ok || fe.Field != "shards" {
			t.Errorf("Shard(%d) = %v, want an error on shards", n, err)
		}
	}
	if _, err := p.Shard(2, "random"); err == nil {
		t.Error("unknown mode accepted")
	}
	if s, err := Synthetic("synthetic:0x1kB", 1); err != nil {
		t.Fatal(err)
	} else if _, err := s.Shard(1, ShardRoundRobin); err != nil {
		t.Errorf("one shard of a root-only page: %v", err)
	}
}

func TestShardByGroup(t *testing.T) {
	p := mustCorpus(t, "twitter", 1)
	s, err := p.Shard(0, ShardTLD)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Origins) != 2 {
		t.Fatalf("twitter by tld: %d origins", len(s.Origins))
	}
	for _, o := range s.Objects {
		want := 1
		if o.Group == "twitter.com" {
			want = 0
		}
		if o.Origin != want {
			t.Errorf("%s (%s) on origin %d", o.ID, o.Group, o.Origin)
		}
	}
	// nytimes: 4 groups on 2 shards keeps each group together
	n := mustCorpus(t, "nytimes", 1)
	s, err = n.Shard(2, ShardTLD)
	if err != nil {
		t.Fatal(err)
	}
	where := map[string]int{}
	for _, o := range s.Objects {
		if w, ok := where[o.Group]; ok && w != o.Origin {
			t.Errorf("group %s split over origins", o.Group)
		}
		where[o.Group] = o.Origin
	}
	if where["nytimes.com"] != 0 {
		t.Error("the root's group is not on s1")
	}
	d, err := n.Shard(0, ShardDomain)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Origins) != 7 {
		t.Errorf("nytimes by domain: %d origins, want 7", len(d.Origins))
	}
	_, err = n.Shard(5, ShardTLD)
	if fe, ok := AsFieldError(err); !ok || fe.Field != "shards" || !strings.Contains(err.Error(), "4 top-level-domain groups (nytimes.com, nyt.com, doubleclick.net, google-analytics.com)") {
		t.Errorf("5 shards over 4 groups: %v", err)
	}
	q := p.Clone()
	q.Objects[3].Group = ""
	_, err = q.Shard(0, ShardTLD)
	if fe, ok := AsFieldError(err); !ok || fe.Field != "objects[3].group" {
		t.Errorf("missing group: %v", err)
	}
	if m, err := ParseShardMode("tld"); err != nil || m != ShardTLD {
		t.Error("ParseShardMode(tld)")
	}
	if _, err := ParseShardMode("rr"); err == nil {
		t.Error("ParseShardMode(rr) accepted")
	}
}
