package why

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/wirelab/wirelab/engine/pktlog"
)

// service is when the bottleneck served one delivered packet: it waited in the queue from In to
// start and was serialised from start to dep (its departure from the rate stage).
type service struct {
	start, dep time.Duration
}

// bottleneck is one direction's serialiser replayed over the window's packets.
type bottleneck struct {
	limited bool
	// served are the indexes (into packets) of the direction's delivered packets in service
	// order; their service intervals do not overlap and increase.
	served []int
}

// replay computes every delivered packet's service interval by running the direction's serialiser
// over the window's packets in the order the link's rate stage took them, as the link model did.
// That order is each packet's arrival plus its sojourn in the gateway's queue (the packet log's
// SojournUS): the arrival order for FIFO disciplines (drop-tail, CoDel, PIE, RED: a packet the
// discipline drops never reaches the rate stage), and FQ-CoDel's own where a later arrival in
// another flow's queue goes first. Packets that entered the rate stage in the same microsecond keep
// their arrival order; a log without sojourns (a capture read back) replays in arrival order.
// Without a serialiser (unlimited rate) a packet is served the instant it arrives, for no time.
// Packets of others (not the load's) take their turn at the bottleneck but are not recorded.
func replay(packets, others []pktlog.Record, dir pktlog.Dir, b Bottleneck, svc []service) bottleneck {
	if b.NewSerializer == nil {
		return bottleneck{} // unlimited: every packet is served the instant it arrives (svc's default)
	}
	// The direction's delivered packets, the load's (i ≥ 0, its index in packets) and the others'.
	type taken struct {
		r *pktlog.Record
		i int
	}
	var order []taken
	for i := range packets {
		if r := &packets[i]; r.Dir == dir && r.Fate.Delivered() {
			order = append(order, taken{r, i})
		}
	}
	for j := range others {
		if o := &others[j]; o.Dir == dir && o.Fate.Delivered() {
			order = append(order, taken{o, -1})
		}
	}
	slices.SortStableFunc(order, func(a, b taken) int {
		if c := cmp.Compare(takenAt(a.r), takenAt(b.r)); c != 0 {
			return c
		}
		return cmp.Compare(a.r.In, b.r.In)
	})
	ser := b.NewSerializer()
	out := bottleneck{limited: true}
	var prev time.Duration
	for k, t := range order {
		in := time.Duration(t.r.In)
		dep := ser.Depart(in, int(t.r.IPLen))
		start := in
		if k > 0 && prev > start {
			start = prev
		}
		start = min(start, dep) // cannot bind with the link's serialisers; keeps the interval well formed
		prev = dep
		if t.i >= 0 {
			svc[t.i] = service{start, dep}
			out.served = append(out.served, t.i)
		}
	}
	return out
}

// takenAt is when the rate stage took r from the queue, to the microsecond (ns since the emulator
// started).
func takenAt(r *pktlog.Record) int64 {
	return r.In + int64(r.SojournUS)*int64(time.Microsecond)
}

// servingAt returns the packet being serialised at t (-1: the bottleneck is idle or unlimited).
func (b *bottleneck) servingAt(svc []service, t time.Duration) int {
	if !b.limited {
		return -1
	}
	k := sort.Search(len(b.served), func(k int) bool { return svc[b.served[k]].dep > t })
	if k < len(b.served) && svc[b.served[k]].start <= t {
		return b.served[k]
	}
	return -1
}

// events appends the service boundaries of the direction that fall inside (from, to).
func (b *bottleneck) events(svc []service, from, to time.Duration, out []time.Duration) []time.Duration {
	if !b.limited {
		return out
	}
	k := sort.Search(len(b.served), func(k int) bool { return svc[b.served[k]].dep > from })
	for ; k < len(b.served); k++ {
		s := svc[b.served[k]]
		if s.start >= to {
			break
		}
		if s.start > from {
			out = append(out, s.start)
		}
		if s.dep < to {
			out = append(out, s.dep)
		}
	}
	return out
}
