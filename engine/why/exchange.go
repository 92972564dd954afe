package why

import (
	"sort"
	"time"

	"github.com/wirelab/wirelab/engine/pktlog"
)

// exchangeAt classifies instant t after request i was sent: its request on the way to the server,
// then its response's bytes (docs/why.md, rules 1–5).
func (d *decomposer) exchangeAt(i int, t time.Duration) Part {
	r := &d.reqs[i]
	c := r.conn
	if c == nil || c.flow == nil {
		return d.busyOr(t, Unattributed)
	}
	ex := d.exchangeOf(i)
	if t < ex.reqArrived {
		return d.requestAt(c.flow, ex, t)
	}
	if c.flow.key.proto == pktlog.ProtoTCP {
		return d.tcpResponseAt(r, ex, t)
	}
	return d.udpResponseAt(r, ex, t)
}

// exchangeOf finds request i's request in the packets and what its response needs.
func (d *decomposer) exchangeOf(i int) *exchange {
	r := &d.reqs[i]
	if r.exchange != nil {
		return r.exchange
	}
	ex := &exchange{reqTx: -1, reqDgram: -1, reqDelivered: -1, lastDg: -1, reqArrived: r.send}
	r.exchange = ex
	f := r.conn.flow
	if f.key.proto == pktlog.ProtoTCP {
		up, down := f.tcp[pktlog.Up], f.tcp[pktlog.Down]
		if up != nil && len(up.segs) > 0 {
			// Its first byte is where the client's sender stood when the loader wrote it: one past
			// everything it had sent before. (The kernel may coalesce it with bytes written just
			// before, such as TLS's Finished, into one segment: the segment covering that byte.)
			at := up.sndMaxAt(r.send-sendSlack, d.pk)
			if at < 0 {
				at = up.segs[0].start
			}
			ex.reqTx = up.origCovering(at)
			if ex.reqTx >= 0 {
				ex.reqArrived = r.end
				if fd := up.firstDelivery(up.segs[ex.reqTx].start, d.pk); fd >= 0 {
					ex.reqArrived = time.Duration(d.pk[up.segs[fd].rec].Out)
				}
			}
		}
		if down != nil {
			ex.respEnd = down.pointAt(r.end)
		}
		return ex
	}
	// QUIC: the request is the first datagram the client sent after its send start; it arrived
	// with the first delivered datagram from there on (QUIC repeats lost frames in new packets).
	for _, k := range f.recs[pktlog.Up] {
		p := &d.pk[k]
		if time.Duration(p.In) < r.send-sendSlack {
			continue
		}
		if ex.reqDgram < 0 {
			ex.reqDgram = k
		}
		if p.Fate.Delivered() {
			ex.reqArrived = time.Duration(p.Out)
			ex.reqDelivered = k
			break
		}
	}
	// The stream's own arrivals when the loader recorded any; a stream with none recorded (the
	// loader's trace missed its frames: quic-go records a packet's frames after it has handed
	// them to the stream, so a load could end before the record of its last packet) is
	// followed at the connection's level, as a load without arrivals is.
	if c := r.conn; len(c.arrivals[r.Stream]) > 0 && r.Stream >= 0 {
		ex.stream = c.arrivals[r.Stream]
		var held [][2]int64
		var pre int64
		var top int64
		for _, a := range ex.stream {
			held = addRange(held, a.off, a.off+a.len)
			if held[0][0] <= pre && held[0][1] > pre {
				pre = held[0][1]
				ex.prefix = append(ex.prefix, progress{a.at, pre})
			}
			if a.off+a.len > top {
				// the stream's newest bytes: the datagram that first carried its end is its last
				// new data (a repair only fills a hole below it)
				top, ex.lastDg = a.off+a.len, d.datagramAt(f, a.at)
			}
		}
		ex.total = pre
	} else {
		// The last datagram of new data for it: the latest to arrive before it completed that was
		// not the repair of a dropped one (the first delivered after a drop).
		repairs := map[int]bool{}
		down := d.delivered(f, pktlog.Down)
		for _, k := range f.recs[pktlog.Down] {
			if !d.pk[k].Fate.Delivered() {
				if j := d.repairOf(k); j >= 0 {
					repairs[j] = true
				}
			}
		}
		for _, k := range down {
			if time.Duration(d.pk[k].Out) > r.end {
				break
			}
			if !repairs[k] {
				ex.lastDg = k
			}
		}
	}
	return ex
}

// requestAt: the request's packet lost and not yet repaired is recovery, queued gateway, on its
// way transfer; before it entered the link (the client's stack) unattributed.
func (d *decomposer) requestAt(f *flow, ex *exchange, t time.Duration) Part {
	k := ex.reqDgram
	if f.key.proto == pktlog.ProtoTCP {
		if ex.reqTx < 0 {
			return d.busyOr(t, Unattributed)
		}
		k = f.tcp[pktlog.Up].segs[ex.reqTx].rec
	}
	if k < 0 {
		return d.busyOr(t, Unattributed)
	}
	if t < time.Duration(d.pk[k].In) {
		// written, not yet sent: the client's own sender held it
		if up := f.tcp[pktlog.Up]; up != nil {
			switch {
			case up.recoveringAt(t):
				return Recovery
			case up.sndMaxAt(t, d.pk) > up.unaAt(t):
				return Window // its window full of earlier data (requests) not yet acknowledged
			}
		}
		return d.busyOr(t, Unattributed)
	}
	if !d.pk[k].Fate.Delivered() {
		return Recovery // its repair arrives at reqArrived
	}
	if d.queuedBehindOthers(k, t) {
		return Gateway
	}
	return Transfer
}

// tcpResponseAt follows the connection's in-order point: TCP delivers the response's bytes only
// after every byte before them.
func (d *decomposer) tcpResponseAt(r *req, ex *exchange, t time.Duration) Part {
	f := r.conn.flow
	down := f.tcp[pktlog.Down]
	if down == nil {
		return d.busyOr(t, Unattributed)
	}
	point := down.pointAt(t)
	if point >= ex.respEnd {
		return d.busyOr(t, Compute) // every byte is in: the loader is finishing the request
	}
	if d.holAt(r, down, point, t) {
		return HoL
	}
	o := down.origCovering(point)
	sent := o >= 0 && time.Duration(d.pk[down.segs[o].rec].In) <= t
	if sent && !d.pk[down.segs[o].rec].Fate.Delivered() {
		return Recovery // the next bytes were lost; the repair has not arrived
	}
	if down.recoveringAt(t) {
		return Recovery // the sender is stalled on a timer or repairing, not sending what is needed
	}
	if sent && d.queuedBehindOthers(down.segs[o].rec, t) {
		return Gateway
	}
	if p := d.busyOr(t, Unattributed); p != Unattributed {
		return p
	}
	if sent && down.sndMaxAt(t, d.pk) >= ex.respEnd {
		return Transfer // the response's last bytes are on their way
	}
	return d.waiting(f, t)
}

// waiting says why a sender with more of the response to send was not sending it, the
// bottleneck idle and nothing lost: it had data in flight that the client had not yet
// acknowledged (window: slow start, the congestion or the receive window — whatever the sender's
// limit, it waited for acknowledgements), or nothing in flight (server: the server had not produced
// the bytes yet — before the response's first byte, its processing).
func (d *decomposer) waiting(f *flow, t time.Duration) Part {
	if f.key.proto == pktlog.ProtoTCP {
		down := f.tcp[pktlog.Down]
		if down.sndMaxAt(t, d.pk) > down.unaAt(t) {
			return Window
		}
		return Server
	}
	// QUIC: the last datagram sent is unacknowledged until a datagram the client sent after
	// receiving it (QUIC acknowledges everything received) reached the server.
	last := -1
	for _, k := range f.recs[pktlog.Down] {
		if time.Duration(d.pk[k].In) > t {
			break
		}
		last = k
	}
	if last < 0 {
		return Server
	}
	for _, k := range d.delivered(f, pktlog.Up) {
		if time.Duration(d.pk[k].Out) > t {
			break
		}
		if d.pk[k].In >= d.pk[last].Out && d.pk[last].Fate.Delivered() {
			return Server
		}
	}
	return Window
}

// holAt: request r's own bytes have arrived beyond a hole that holds none of them (needs the
// server's stream map of the connection).
func (d *decomposer) holAt(r *req, down *tcpDir, point int64, t time.Duration) bool {
	runs := r.conn.smap[r.Stream]
	if len(runs) == 0 || !down.holdingAt(t) {
		return false
	}
	first := int64(1<<62 - 1)
	mine := false
	for _, k := range down.arrived {
		s := down.segs[k]
		if time.Duration(d.pk[s.rec].Out) > t {
			break
		}
		if s.start > point {
			first = min(first, s.start)
			mine = mine || intersects(runs, s.start, s.end)
		}
	}
	return mine && !intersects(runs, point, first)
}

func intersects(runs [][2]int64, s, e int64) bool {
	for _, r := range runs {
		if r[0] < e && s < r[1] {
			return true
		}
	}
	return false
}

// udpResponseAt follows an h3 response: with the loader's stream arrivals the stream's own bytes,
// else the connection's datagrams.
func (d *decomposer) udpResponseAt(r *req, ex *exchange, t time.Duration) Part {
	f := r.conn.flow
	down := d.delivered(f, pktlog.Down)
	var next, prev int // the datagram bringing what is needed next; the one that brought the last
	if ex.stream != nil {
		pre := prefixAt(ex.prefix, t)
		if pre >= ex.total {
			return d.busyOr(t, Compute)
		}
		for _, a := range ex.stream {
			if a.at <= t && a.off > pre {
				return Recovery // later bytes of the stream arrived: the needed ones were lost
			}
		}
		next, prev = -1, -1
		for _, a := range ex.stream {
			if a.at > t && a.off <= pre && pre < a.off+a.len {
				next = d.datagramAt(f, a.at)
				break
			}
		}
		if k := sort.Search(len(ex.prefix), func(k int) bool { return ex.prefix[k].t > t }); k > 0 {
			prev = d.datagramAt(f, ex.prefix[k-1].t)
		}
	} else {
		k := sort.Search(len(down), func(k int) bool { return time.Duration(d.pk[down[k]].Out) > t })
		next, prev = -1, -1
		if k < len(down) {
			next = down[k]
		}
		if ex.lastDg < 0 || next < 0 || time.Duration(d.pk[next].Out) > time.Duration(d.pk[ex.lastDg].Out) && !d.repairPending(f, t) {
			return d.busyOr(t, Compute) // nothing more of the connection arrives for this request
		}
		// At the connection's level: a dropped datagram whose repair has not arrived, once
		// everything sent with it has, is what the load waits for.
		if d.repairPending(f, t) {
			return Recovery
		}
	}
	if next < 0 {
		return d.busyOr(t, Unattributed)
	}
	if ex.stream != nil {
		// A datagram of the connection dropped since the last useful one, before the next: the
		// needed bytes were in it.
		from := d.in.Start
		if prev >= 0 {
			from = time.Duration(d.pk[prev].In)
		}
		for _, k := range f.recs[pktlog.Down] {
			in := time.Duration(d.pk[k].In)
			if in > t || in >= time.Duration(d.pk[next].In) {
				break
			}
			if in > from && !d.pk[k].Fate.Delivered() {
				return Recovery
			}
		}
	}
	sent := time.Duration(d.pk[next].In) <= t
	if sent && d.queuedBehindOthers(next, t) {
		return Gateway
	}
	if p := d.busyOr(t, Unattributed); p != Unattributed {
		return p
	}
	if sent && ex.lastDg >= 0 && time.Duration(d.pk[ex.lastDg].In) <= t {
		return Transfer
	}
	return d.waiting(f, t)
}

// repairPending: a down datagram of f was dropped, everything sent with it (or before) has
// arrived by t, and its repair — the first datagram sent after it that arrived — has not.
func (d *decomposer) repairPending(f *flow, t time.Duration) bool {
	down := f.recs[pktlog.Down]
	for i, k := range down {
		x := &d.pk[k]
		if time.Duration(x.In) > t {
			break
		}
		if x.Fate.Delivered() {
			continue
		}
		caughtUp := true
		for _, j := range down[:i] {
			if d.pk[j].Fate.Delivered() && time.Duration(d.pk[j].Out) > t {
				caughtUp = false
				break
			}
		}
		for _, j := range down[i+1:] {
			if d.pk[j].In != x.In {
				break
			}
			if d.pk[j].Fate.Delivered() && time.Duration(d.pk[j].Out) > t {
				caughtUp = false
			}
		}
		if !caughtUp {
			continue
		}
		if rep := d.repairOf(k); rep < 0 || time.Duration(d.pk[rep].Out) > t {
			return true
		}
	}
	return false
}

// delivered are the delivered packets of f in direction dir, in arrival order.
func (d *decomposer) delivered(f *flow, dir pktlog.Dir) []int {
	if f.deliv[dir] == nil {
		out := []int{}
		for _, k := range f.recs[dir] {
			if d.pk[k].Fate.Delivered() {
				out = append(out, k)
			}
		}
		f.deliv[dir] = out
	}
	return f.deliv[dir]
}

// datagramAt is the last datagram of f's down direction that arrived at or before at.
func (d *decomposer) datagramAt(f *flow, at time.Duration) int {
	down := d.delivered(f, pktlog.Down)
	k := sort.Search(len(down), func(k int) bool { return time.Duration(d.pk[down[k]].Out) > at })
	if k == 0 {
		return -1
	}
	return down[k-1]
}

func prefixAt(ps []progress, t time.Duration) int64 {
	k := sort.Search(len(ps), func(k int) bool { return ps[k].t > t })
	if k == 0 {
		return 0
	}
	return ps[k-1].point
}
