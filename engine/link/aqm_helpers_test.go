package link

import (
	"encoding/binary"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// ipPacket builds an IPv4 packet of size bytes (≥ 28) of flow flow (its source port) over UDP,
// or TCP when tcp, with the given ECN codepoint and a valid header checksum.
func ipPacket(size int, flow uint16, ecn uint8, tcp bool) []byte {
	b := make([]byte, size)
	b[0] = 0x45
	b[1] = ecn & 3
	binary.BigEndian.PutUint16(b[2:], uint16(size))
	b[8] = 64
	b[9] = 17
	if tcp {
		b[9] = 6
	}
	copy(b[12:16], []byte{10, 77, 1, 1})
	copy(b[16:20], []byte{10, 77, 0, 2})
	binary.BigEndian.PutUint16(b[20:], 443)
	binary.BigEndian.PutUint16(b[22:], flow)
	binary.BigEndian.PutUint16(b[10:], ipv4Checksum(b[:20]))
	return b
}

// ipv4Checksum computes an IPv4 header checksum from scratch (its field taken as zero).
func ipv4Checksum(h []byte) uint16 {
	var s uint32
	for i := 0; i < len(h); i += 2 {
		if i == 10 {
			continue
		}
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func flowOf(p *Packet) uint16 { return binary.BigEndian.Uint16(p.Data[22:24]) }

// arrival is one packet offered to a link.
type arrival struct {
	at   time.Duration
	size int
	flow uint16
	ecn  uint8
}

// outcome is what happened to one offered packet.
type outcome struct {
	arrival
	index   int
	fate    Fate
	due     time.Duration // delivered: release time; dropped: when
	sojourn time.Duration
}

// runLink pushes arrivals (sorted by time) through a Direction built from cfg, popping at every
// deadline the link announces (or, with popEvery > 0, only on that fixed grid, late), and returns
// every packet's outcome in arrival order plus the direction.
func runLink(t testing.TB, cfg Config, arrivals []arrival, popEvery time.Duration) ([]outcome, *Direction) {
	t.Helper()
	d := newDirection(t, cfg)
	out := make([]outcome, len(arrivals))
	index := map[*Packet]int{}
	collect := func(now time.Duration) {
		for {
			p, ok := d.Pop(now)
			if !ok {
				return
			}
			i := index[p]
			out[i].fate, out[i].due, out[i].sojourn = p.Fate(), p.Due(), p.Sojourn()
			delete(index, p)
		}
	}
	// pops up to (not including) limit.
	popUntil := func(limit time.Duration) {
		if popEvery > 0 {
			return
		}
		for {
			next, ok := d.NextDeadline()
			if !ok || next >= limit {
				return
			}
			collect(next)
		}
	}
	lastGrid := time.Duration(0)
	for i, a := range arrivals {
		popUntil(a.at)
		if popEvery > 0 {
			for lastGrid+popEvery <= a.at {
				lastGrid += popEvery
				collect(lastGrid)
			}
		}
		out[i] = outcome{arrival: a, index: i}
		p := &Packet{Data: ipPacket(a.size, a.flow, a.ecn, false)}
		if f := d.Push(a.at, p); f != Accepted {
			out[i].fate, out[i].due = f, a.at
			continue
		}
		index[p] = i
	}
	for len(index) > 0 {
		next, ok := d.NextDeadline()
		if !ok {
			t.Fatalf("%d packets inside but no deadline", len(index))
		}
		if popEvery > 0 {
			next = max(next, lastGrid) + popEvery
		}
		collect(next)
	}
	return out, d
}

// cbr makes a constant-rate stream of size-byte packets of one flow at bps from start to end.
func cbr(start, end time.Duration, bps float64, size int, flow uint16, ecn uint8) []arrival {
	var out []arrival
	gap := time.Duration(float64(size*8) / bps * 1e9)
	for at := start; at < end; at += gap {
		out = append(out, arrival{at: at, size: size, flow: flow, ecn: ecn})
	}
	return out
}

// poisson makes Poisson arrivals at bps on average, sizes uniform in [40, 1500], flows uniform
// in [1, flows].
func poisson(rng *rand.Rand, start, end time.Duration, bps float64, flows int, ecn uint8) []arrival {
	var out []arrival
	mean := float64((40+1500)/2*8) / bps
	for at := start; ; {
		at += time.Duration(rng.ExpFloat64() * mean * 1e9)
		if at >= end {
			return out
		}
		out = append(out, arrival{at: at, size: 40 + rng.IntN(1461), flow: uint16(1 + rng.IntN(flows)), ecn: ecn})
	}
}

func merge(streams ...[]arrival) []arrival {
	var out []arrival
	for _, s := range streams {
		out = append(out, s...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// aqm is a Config for discipline name with its defaults, at rate bps and the discipline's
// default limit.
func aqm(name string, bps int64) Config {
	info, _ := profile.LookupDiscipline(name)
	return Config{RateBPS: bps, Queue: info.DefaultLimit, Discipline: info.Defaults, Seed: 1}
}

func countFate(out []outcome, f Fate) int {
	n := 0
	for _, o := range out {
		if o.fate == f {
			n++
		}
	}
	return n
}
