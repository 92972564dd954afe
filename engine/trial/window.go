package trial

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/pktlog"
	"github.com/wirelab/wirelab/engine/realtime"
)

// A load's packets are the records the trial takes from the packet log when the load has ended and
// the link has settled (every packet delivered or dropped, nothing new for a quiet period), minus
// the packets of flows the load did not open (Own). Loads run one after another, so a window is
// [end of the previous load's settling, end of this load's settling); what crossed the link
// between two windows is counted as stray (engine.log, trial.json's emulator.between_loads).

// flow identifies a transport flow regardless of direction.
type flow struct {
	proto      uint8
	client     [4]byte
	clientPort uint16
	server     [4]byte
	serverPort uint16
}

func flowOf(r *pktlog.Record) flow {
	if r.Dir == pktlog.Up {
		return flow{r.Proto, r.Src, r.SrcPort, r.Dst, r.DstPort}
	}
	return flow{r.Proto, r.Dst, r.DstPort, r.Src, r.SrcPort}
}

// Own keeps the records of the flows a load opened within the window: a TCP flow whose first
// record in the window is the client's SYN (without ACK), a UDP flow whose first record is the
// client's (a DNS query, a QUIC Initial). Records of other flows — a connection of an earlier load
// still closing (a FIN retransmitted after the settling), a datagram to a port the client no longer
// uses — are left out and counted as stray. Other IP protocols (ICMP errors caused by the load) are
// kept. recs must be sorted by In (as Log.Take returns them).
func Own(recs []pktlog.Record) (own []pktlog.Record, stray int) {
	verdict := map[flow]bool{}
	own = recs[:0:0]
	for i := range recs {
		r := &recs[i]
		keep := true
		if r.Proto == pktlog.ProtoTCP || r.Proto == pktlog.ProtoUDP {
			f := flowOf(r)
			v, seen := verdict[f]
			if !seen {
				v = r.Dir == pktlog.Up && (r.Proto == pktlog.ProtoUDP || r.Flags&(pktlog.FlagSYN|pktlog.FlagACK) == pktlog.FlagSYN)
				verdict[f] = v
			}
			keep = v
		}
		if keep {
			own = append(own, *r)
		} else {
			stray++
		}
	}
	return own, stray
}

// linkCounters reads how many packets entered the link and how many left it (delivered or
// dropped), both directions.
type linkCounters interface {
	Stats() realtime.Stats
}

func counts(l linkCounters) (entered, left int64) {
	s := l.Stats()
	for _, d := range []realtime.DirStats{s.Up, s.Down} {
		entered += d.Packets
		left += d.Delivered + d.DropsLoss + d.DropsQueue
	}
	return entered, left
}

// settlePoll is how often settle looks at the link's counters.
const settlePoll = 2 * time.Millisecond

// settle waits until the link has been idle for quiet: nothing inside it and nothing new entering.
// Once the client has exited, a packet can then only come from a timer (a retransmission), which
// Own sorts out. It gives up after limit (false) or when ctx ends.
func settle(ctx context.Context, l linkCounters, quiet, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	lastEntered, _ := counts(l)
	idleSince := time.Now()
	t := time.NewTicker(settlePoll)
	defer t.Stop()
	for {
		entered, left := counts(l)
		now := time.Now()
		if entered != lastEntered || left != entered {
			lastEntered, idleSince = entered, now
		} else if now.Sub(idleSince) >= quiet {
			return true
		}
		if now.After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// quietPeriod is how long the link must be idle before a load's window closes: longer than TCP's
// delayed ACK (40 ms) and than the endpoints' reaction to the last packet delivered, on a loaded
// machine.
const quietPeriod = 60 * time.Millisecond

// clockMap converts CLOCK_MONOTONIC instants (what fetch reports) to the emulator's clock (what
// packet records carry); both count the same monotonic time, from different origins.
type clockMap struct{ offset int64 }

func newClockMap(e interface{ Now() time.Duration }) clockMap {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	emu := e.Now()
	return clockMap{offset: ts.Nano() - int64(emu)}
}

func (c clockMap) emulatorTime(monotonicNs int64) time.Duration {
	return time.Duration(monotonicNs - c.offset)
}

// quicReportLimit bounds the wait for the server's report of a QUIC connection's end after the
// link settled (the client's CONNECTION_CLOSE was delivered at least quietPeriod earlier).
const quicReportLimit = 2 * time.Second

// quicClients lists the client address:port of every UDP flow to the server's QUIC port that the
// load opened.
func quicClients(own []pktlog.Record, port uint16) []string {
	return clientsOf(own, pktlog.ProtoUDP, port)
}

// clientsOf lists the client address:port of every flow of proto to the server's port that the
// load opened.
func clientsOf(own []pktlog.Record, proto uint8, port uint16) []string {
	seen := map[string]bool{}
	var out []string
	for i := range own {
		r := &own[i]
		if r.Dir != pktlog.Up || r.Proto != proto || r.DstPort != port {
			continue
		}
		a := fmt.Sprintf("%d.%d.%d.%d:%d", r.Src[0], r.Src[1], r.Src[2], r.Src[3], r.SrcPort)
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}
