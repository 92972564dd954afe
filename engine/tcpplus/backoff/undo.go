package backoff

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/wirelab/wirelab/engine/tcpplus/internal/nspath"
)

// undoCounters are the TcpExt counters (RFC 2883, RFC 3522, RFC 5682) that count a reduction
// the kernel took back: it judged the loss spurious (a DSACK, a timestamp older than the
// retransmission, an F-RTO) and restored cwnd to prior_cwnd and ssthresh to prior_ssthresh.
// A reduction taken back is not a backoff, so a flow with one is not a measurement.
var undoCounters = []string{"TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo", "TCPLossUndo", "TCPSpuriousRTOs"}

// Undos is how many of each undoCounters rose during a flow ("" when none did).
type Undos map[string]uint64

func (u Undos) String() string {
	var parts []string
	for _, name := range undoCounters {
		if n := u[name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s +%d", name, n))
		}
	}
	return strings.Join(parts, ", ")
}

// readUndoCounters reads the undo counters of namespace ns. The sender's namespace holds one
// socket at a time — the measured flow's — so its counters are that flow's.
func readUndoCounters(p *nspath.Path, ns string) (map[string]uint64, error) {
	var raw []byte
	err := p.Do(ns, func() error {
		var err error
		// thread-self: /proc/net is the namespace of the process's first thread, not this one.
		raw, err = os.ReadFile("/proc/thread-self/net/netstat")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("backoff: reading the sender's TCP counters: %w", err)
	}
	return parseUndoCounters(raw)
}

// parseUndoCounters picks undoCounters out of /proc/net/netstat: pairs of lines, a header
// ("TcpExt: Name …") and the values ("TcpExt: 1 …").
func parseUndoCounters(raw []byte) (map[string]uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var header []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "TcpExt:" {
			continue
		}
		if header == nil {
			header = fields[1:]
			continue
		}
		values := fields[1:]
		if len(values) != len(header) {
			return nil, fmt.Errorf("backoff: netstat: %d TcpExt names, %d values", len(header), len(values))
		}
		out := map[string]uint64{}
		for i, name := range header {
			v, err := strconv.ParseUint(values[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("backoff: netstat: %s = %q: %w", name, values[i], err)
			}
			out[name] = v
		}
		for _, name := range undoCounters {
			if _, ok := out[name]; !ok {
				return nil, fmt.Errorf("backoff: netstat has no TcpExt counter %s", name)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("backoff: netstat has no TcpExt counters")
}

// undosBetween is what rose from before to after.
func undosBetween(before, after map[string]uint64) Undos {
	u := Undos{}
	for _, name := range undoCounters {
		if after[name] > before[name] {
			u[name] = after[name] - before[name]
		}
	}
	return u
}
