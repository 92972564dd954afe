package why

import (
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
	// order (In order); their service intervals do not overlap and increase.
	served []int
}

// replay computes every delivered packet's service interval by running the direction's serialiser
// over the window's packets in In order, as the link model did (it computes a packet's departure
// when the packet arrives, from its arrival and size: FIFO, deterministic). Without a serialiser
// (unlimited rate) a packet is served the instant it arrives, for no time.
// Packets of others (not the load's) take their turn at the bottleneck but are not recorded.
func replay(packets, others []pktlog.Record, dir pktlog.Dir, b Bottleneck, svc []service) bottleneck {
	if b.NewSerializer == nil {
		return bottleneck{} // unlimited: every packet is served the instant it arrives (svc's default)
	}
	ser := b.NewSerializer()
	out := bottleneck{limited: true}
	var prev time.Duration
	first := true
	serve := func(r *pktlog.Record) service {
		in := time.Duration(r.In)
		dep := ser.Depart(in, int(r.IPLen))
		start := in
		if !first && prev > start {
			start = prev
		}
		start = min(start, dep) // cannot bind with the link's serialisers; keeps the interval well formed
		prev, first = dep, false
		return service{start, dep}
	}
	j := 0
	for i := range packets {
		r := &packets[i]
		if r.Dir != dir || !r.Fate.Delivered() {
			continue
		}
		for ; j < len(others) && others[j].In <= r.In; j++ {
			if o := &others[j]; o.Dir == dir && o.Fate.Delivered() {
				serve(o)
			}
		}
		svc[i] = serve(r)
		out.served = append(out.served, i)
	}
	return out
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
