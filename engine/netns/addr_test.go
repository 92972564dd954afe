package netns

import "testing"

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
