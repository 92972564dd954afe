package netns

import "testing"

func TestOriginOf(t *testing.T) {
	cases := []struct {
		a    [4]byte
		want int
	}{
		{[4]byte{10, 77, 1, 1}, 1},
		{[4]byte{10, 77, 1, 64}, 64},
		{[4]byte{10, 77, 1, 65}, 0},
		{[4]byte{10, 77, 1, 0}, 0},
		{[4]byte{10, 77, 2, 53}, 0},
		{[4]byte{10, 77, 0, 2}, 0},
		{[4]byte{192, 168, 1, 1}, 0},
	}
	for _, c := range cases {
		if got := OriginOf(c.a); got != c.want {
			t.Errorf("OriginOf(%v) = %d, want %d", c.a, got, c.want)
		}
	}
	for n := 1; n <= MaxOrigins; n++ {
		if got := OriginOf(OriginAddr(n).As4()); got != n {
			t.Errorf("OriginOf(OriginAddr(%d)) = %d", n, got)
		}
	}
}

func TestNames(t *testing.T) {
	if got := NamespaceName("0123abcd", Client); got != "wirelab-0123abcd-c" {
		t.Fatal(got)
	}
	if !namespacePattern.MatchString(NamespaceName("0123abcd", Server)) {
		t.Fatal("pattern does not match server name")
	}
	for _, bad := range []string{"wirelab-0123abcd-x", "wirelab-0123abc-c", "wirelab-0123abcd-c2", "other-0123abcd-c"} {
		if namespacePattern.MatchString(bad) {
			t.Errorf("pattern matches %q", bad)
		}
	}
	id, err := newID()
	if err != nil || !idPattern.MatchString(id) {
		t.Fatalf("newID() = %q, %v", id, err)
	}
}

func TestProcessStartTime(t *testing.T) {
	st, err := processStartTime(1)
	if err != nil {
		t.Skip("no /proc/1/stat:", err)
	}
	if !alive(1, st) || alive(1, st+1) {
		t.Fatal("alive() disagrees with processStartTime")
	}
}
