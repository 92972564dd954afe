package nspath

import (
	"reflect"
	"testing"

	"github.com/wirelab/wirelab/engine/tcpplus/internal/owner"
)

func TestLeftovers(t *testing.T) {
	live := owner.Process{PID: 1, Start: 1}
	gone := owner.Process{PID: 2, Start: 2}
	alive := func(p owner.Process) bool { return p == live }
	namespaces := []string{
		Prefix + "aaaa0001-snd", Prefix + "aaaa0001-rtr", Prefix + "aaaa0001-rcv", // live owner
		Prefix + "bbbb0002-snd", Prefix + "bbbb0002-rcv", // owner gone
		Prefix + "cccc0003-rtr",   // no ownership file at all
		Prefix + "dddd0004-other", // not a path's namespace: left alone
		Prefix + "x",              // neither
	}
	owners := map[string]owner.Process{
		"aaaa0001": live,
		"bbbb0002": gone,
		"eeee0005": gone, // ownership file whose namespaces are already gone
	}
	got := Leftovers(namespaces, owners, alive)
	want := Dead{
		IDs:        []string{"bbbb0002", "eeee0005"},
		Namespaces: []string{Prefix + "bbbb0002-rcv", Prefix + "bbbb0002-snd", Prefix + "cccc0003-rtr"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Leftovers = %+v\nwant %+v", got, want)
	}
}

func TestPathID(t *testing.T) {
	for ns, want := range map[string]string{
		Prefix + "0123abcd-snd": "0123abcd",
		Prefix + "0123abcd-rtr": "0123abcd",
		Prefix + "0123abcd-rcv": "0123abcd",
		Prefix + "0123abcd-foo": "",
		Prefix + "-snd":         "",
		"wirelab-0123abcd-c":    "",
	} {
		got, ok := pathID(ns)
		if ok != (want != "") || got != want {
			t.Errorf("pathID(%q) = %q, %v; want %q", ns, got, ok, want)
		}
	}
}
