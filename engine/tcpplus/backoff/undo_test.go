package backoff

import (
	"strings"
	"testing"
)

// Two TcpExt lines as /proc/net/netstat prints them (trimmed), after an IpExt pair.
const netstat = `TcpExt: SyncookiesSent TCPFullUndo TCPPartialUndo TCPDSACKUndo TCPLossUndo TCPSpuriousRTOs TCPSACKReorder
TcpExt: 0 3 1 0 2 0 7
IpExt: InNoRoutes InTruncatedPkts
IpExt: 0 0
`

func TestParseUndoCounters(t *testing.T) {
	got, err := parseUndoCounters([]byte(netstat))
	if err != nil {
		t.Fatal(err)
	}
	if got["TCPFullUndo"] != 3 || got["TCPPartialUndo"] != 1 || got["TCPLossUndo"] != 2 || got["TCPSACKReorder"] != 7 {
		t.Errorf("counters %v", got)
	}
	later := map[string]uint64{"TCPFullUndo": 3, "TCPPartialUndo": 2, "TCPDSACKUndo": 0, "TCPLossUndo": 4, "TCPSpuriousRTOs": 0}
	if u := undosBetween(got, later); u.String() != "TCPPartialUndo +1, TCPLossUndo +2" {
		t.Errorf("undos %q", u)
	}
	if u := undosBetween(got, got); len(u) != 0 || u.String() != "" {
		t.Errorf("no change gave %v", u)
	}
	for name, bad := range map[string]string{
		"no TcpExt":      "IpExt: A\nIpExt: 1\n",
		"a counter gone": "TcpExt: TCPFullUndo\nTcpExt: 1\n",
		"torn values":    strings.Replace(netstat, " 7\n", "\n", 1),
		"not a number":   strings.Replace(netstat, " 7\n", " x\n", 1),
	} {
		if _, err := parseUndoCounters([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
