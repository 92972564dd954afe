package why

import (
	"net/netip"
	"net/url"
	"sort"
	"time"

	"github.com/wirelab/wirelab/engine/pktlog"
)

// Tolerances of matching the loader's instants (moved to the emulator's clock: microseconds of
// error) and the server's records (wall clock; some servers log milliseconds) to packets.
const (
	// sendSlack: a request's first packet enters the link after the loader's send start; what the
	// client sent more than this before it (the clock conversion's error) came before the request.
	sendSlack = 50 * time.Microsecond
	// ackClock: data a sender transmits within this of an acknowledgement's arrival was released
	// by it (the kernel answers an ACK in microseconds; a busy machine in a millisecond or two).
	ackClock = 2 * time.Millisecond
	// connSlack: a Chromium connection's first packet leaves this close to its connect start.
	connSlack = 5 * time.Millisecond
)

// Decompose partitions [in.Start, in.End] into parts and classifies the load's retransmissions.
// The parts sum to in.End − in.Start (in milliseconds) by construction.
func Decompose(in Input) Result {
	d := newDecomposer(in)
	var res Result
	for _, f := range d.flows {
		for dir := 0; dir < 2; dir++ {
			if t := f.tcp[dir]; t != nil {
				res.Retx.Add(classifyRetx(t, d.pk, &res.Retransmissions))
			}
		}
	}
	res.Retx.Add(in.QUIC)
	if in.End <= in.Start {
		return res
	}
	d.walk()
	res.Path = d.path
	for _, s := range d.path {
		res.Parts[s.Part] += float64(s.To-s.From) / float64(time.Millisecond)
	}
	return res
}

// req is a request of the timeline on the emulator's clock.
type req struct {
	Request
	issued, dns, connect, connectEnd, send, end, releasedAt time.Duration // -1 unset
	conn                                                    *connInfo
	path                                                    string
	// the exchange, found in the packets (lazily)
	exchange *exchange
}

// connInfo is a timeline connection and its flow.
type connInfo struct {
	Conn
	flow   *flow
	opener int // the request that opened it (-1 unknown)
	// arrivals by stream (h3, engine loader)
	arrivals map[int64][]arrival
	smap     map[int64][][2]int64 // stream → its payload ranges in relative sequence (h2 stream map)
}

type arrival struct {
	at       time.Duration
	off, len int64
}

type exchange struct {
	reqTx      int           // TCP: seg index of the request's first transmission; UDP: packet index
	reqArrived time.Duration // the request reached the server
	respEnd    int64         // TCP: the receiver's in-order point when the request completed
	// h3
	prefix       []progress // the stream's contiguous prefix over time (arrivals)
	total        int64
	lastDg       int // the datagram that delivered the response's last bytes (-1)
	stream       []arrival
	reqDgram     int // QUIC: the request's first datagram
	reqDelivered int // QUIC: the datagram that brought it to the server
}

type decomposer struct {
	in     Input
	pk     []pktlog.Record
	own    []bool
	svc    []service
	up     bottleneck
	down   bottleneck
	byKey  map[flowKey]*flow
	flows  []*flow
	events map[*flow][]time.Duration
	dnsRec []int // DNS datagrams (UDP port 53), In order
	reqs   []req
	conns  map[int]*connInfo
	path   []Segment
}

func newDecomposer(in Input) *decomposer {
	d := &decomposer{in: in, conns: map[int]*connInfo{}, events: map[*flow][]time.Duration{}}
	d.pk = in.Packets
	d.svc = make([]service, len(d.pk))
	for i := range d.pk {
		d.svc[i] = service{time.Duration(d.pk[i].In), time.Duration(d.pk[i].In)}
	}
	d.up = replay(d.pk, in.Others, pktlog.Up, in.Path.Up, d.svc)
	d.down = replay(d.pk, in.Others, pktlog.Down, in.Path.Down, d.svc)
	d.byKey, d.flows = indexFlows(d.pk)
	for i := range d.pk {
		r := &d.pk[i]
		if r.Proto == pktlog.ProtoUDP && (r.DstPort == pktlog.DNSPort || r.SrcPort == pktlog.DNSPort) {
			d.dnsRec = append(d.dnsRec, i)
		}
	}
	at := func(us int64) time.Duration {
		if us < 0 {
			return Unset
		}
		return in.Origin + time.Duration(us)*time.Microsecond
	}
	for _, c := range in.Timeline.Conns {
		d.conns[c.ID] = &connInfo{Conn: c, opener: -1}
	}
	for i, r := range in.Timeline.Requests {
		q := req{Request: r, issued: at(r.Issued), dns: at(r.DNSStart), connect: at(r.Connect),
			connectEnd: at(r.ConnectEnd), send: at(r.SendStart), end: at(r.End), releasedAt: Unset}
		if r.InitiatorAt > 0 {
			q.releasedAt = at(r.InitiatorAt)
		}
		if q.issued < 0 {
			q.issued = in.Start
		}
		if q.end < 0 {
			q.end = in.End
		}
		if u, err := url.Parse(r.URL); err == nil {
			q.path = u.EscapedPath()
		}
		q.conn = d.conns[r.Conn]
		if q.conn != nil && q.conn.opener < 0 && q.connect >= 0 {
			q.conn.opener = i
		}
		d.reqs = append(d.reqs, q)
	}
	for _, c := range d.conns {
		d.matchFlow(c)
	}
	d.attachServer()
	return d
}

// matchFlow finds the flow of a timeline connection: by its local and remote address when the
// loader knows both, else the flow to its remote address that opened closest after its opener's
// connect start.
func (d *decomposer) matchFlow(c *connInfo) {
	proto := uint8(pktlog.ProtoTCP)
	if c.Transport == "udp" {
		proto = pktlog.ProtoUDP
	}
	remote, err := netip.ParseAddrPort(c.Remote)
	if err != nil || !remote.Addr().Is4() {
		return
	}
	if local, err := netip.ParseAddrPort(c.Local); err == nil && local.Addr().Is4() && !local.Addr().IsUnspecified() {
		k := flowKey{proto: proto, client: local.Addr().As4(), server: remote.Addr().As4(), cport: local.Port(), sport: remote.Port()}
		c.flow = d.byKey[k]
	} else if err == nil && local.Addr().IsUnspecified() {
		// a socket bound to every address (the loader's QUIC sockets): its port tells it
		for _, f := range d.flows {
			if f.key.proto == proto && f.key.cport == local.Port() && f.key.server == remote.Addr().As4() && f.key.sport == remote.Port() {
				c.flow = f
			}
		}
	} else {
		want := d.in.Start
		if c.opener >= 0 {
			want = d.reqs[c.opener].connect
		}
		best := time.Duration(-1)
		for _, f := range d.flows {
			if f.key.proto != proto || f.key.server != remote.Addr().As4() || f.key.sport != remote.Port() || f.first < want-connSlack {
				continue
			}
			if taken := d.flowTaken(f); taken {
				continue
			}
			if gap := f.first - want; best < 0 || gap < best {
				best, c.flow = gap, f
			}
		}
	}
	if c.flow == nil {
		return
	}
	if len(c.Arrivals) > 0 {
		c.arrivals = map[int64][]arrival{}
		for _, a := range c.Arrivals {
			c.arrivals[a[0]] = append(c.arrivals[a[0]], arrival{at: d.in.Origin + time.Duration(a[1])*time.Microsecond, off: a[2], len: a[3]})
		}
	}
}

func (d *decomposer) flowTaken(f *flow) bool {
	for _, c := range d.conns {
		if c.flow == f {
			return true
		}
	}
	return false
}

// attachServer gives each connection the server's stream map of its client endpoint.
func (d *decomposer) attachServer() {
	byRemote := map[string]*connInfo{}
	for _, c := range d.conns {
		if c.flow == nil {
			continue
		}
		k := c.flow.key
		byRemote[netip.AddrPortFrom(netip.AddrFrom4(k.client), k.cport).String()] = c
	}
	for _, m := range d.in.Maps {
		c := byRemote[m.Remote]
		if c == nil || c.flow == nil || c.flow.tcp[pktlog.Down] == nil || len(c.flow.tcp[pktlog.Down].segs) == 0 {
			continue
		}
		// Payload offset 0 is the first byte after the server's SYN (relative sequence 1).
		c.smap = map[int64][][2]int64{}
		for _, run := range m.Runs {
			c.smap[run.Stream] = append(c.smap[run.Stream], [2]int64{run.Start + 1, run.End + 1})
		}
	}
}

// walk follows the critical chain backwards from the end of the interval.
func (d *decomposer) walk() {
	hi := d.in.End
	cur := d.lastRequest()
	if cur < 0 {
		d.charge(d.in.Start, hi, Unattributed, -1)
		d.reverse()
		return
	}
	until := hi
	for hi > d.in.Start {
		r := &d.reqs[cur]
		end := min(r.end, until, hi)
		if end < hi {
			// after the request ended and before what it released: the loader's own work
			d.pieces(end, hi, -1, func(t time.Duration) Part { return d.busyOr(t, Compute) })
		}
		lo := max(min(r.issued, end), d.in.Start)
		d.life(cur, lo, end)
		hi = lo
		if hi <= d.in.Start {
			break
		}
		p := d.pred(cur)
		if p < 0 {
			d.pieces(d.in.Start, hi, -1, func(t time.Duration) Part { return d.busyOr(t, Compute) })
			break
		}
		until = d.reqs[p].end
		if r.releasedAt >= 0 {
			until = min(until, r.releasedAt)
		}
		cur = p
	}
	d.reverse()
}

func (d *decomposer) reverse() {
	// pieces were appended from the end backwards within each tile; sort and merge.
	sort.Slice(d.path, func(i, j int) bool { return d.path[i].From < d.path[j].From })
	merged := d.path[:0]
	for _, s := range d.path {
		if s.To <= s.From {
			continue
		}
		if n := len(merged); n > 0 && merged[n-1].Part == s.Part && merged[n-1].Request == s.Request && merged[n-1].To == s.From {
			merged[n-1].To = s.To
			continue
		}
		merged = append(merged, s)
	}
	d.path = merged
}

// lastRequest is the request that completed last (the load's end waited for it).
func (d *decomposer) lastRequest() int {
	best := -1
	for i := range d.reqs {
		if best < 0 || d.reqs[i].end > d.reqs[best].end {
			best = i
		}
	}
	return best
}

// pred is what the load waited for before request i was issued: its initiator, else the latest
// request that ended before it was issued.
func (d *decomposer) pred(i int) int {
	r := &d.reqs[i]
	if p := r.Initiator; p >= 0 && p < len(d.reqs) && p != i && d.reqs[p].issued < r.issued {
		return p
	}
	best := -1
	for j := range d.reqs {
		q := &d.reqs[j]
		if j == i || q.issued >= r.issued || q.end > r.issued {
			continue
		}
		if best < 0 || q.end > d.reqs[best].end {
			best = j
		}
	}
	return best
}

func (d *decomposer) charge(from, to time.Duration, p Part, r int) {
	if to > from {
		d.path = append(d.path, Segment{From: from, To: to, Part: p, Request: r})
	}
}

// life classifies request i's life between lo and hi, tile by tile.
func (d *decomposer) life(i int, lo, hi time.Duration) {
	r := &d.reqs[i]
	type tile struct {
		at time.Duration
		ph phase
	}
	tiles := []tile{{r.issued, phBlocked}}
	add := func(at time.Duration, ph phase) {
		if at >= 0 {
			tiles = append(tiles, tile{max(at, tiles[len(tiles)-1].at), ph})
		}
	}
	add(r.dns, phDNS)
	add(r.connect, phSetup)
	add(r.send, phExchange)
	for k, t := range tiles {
		from, to := t.at, hi
		if k+1 < len(tiles) {
			to = tiles[k+1].at
		}
		from, to = max(from, lo), min(to, hi)
		if to <= from {
			continue
		}
		ph := t.ph
		d.pieces(from, to, i, func(at time.Duration) Part { return d.classify(i, ph, at) })
	}
}

type phase uint8

const (
	phBlocked phase = iota
	phDNS
	phSetup
	phExchange
)

// pieces splits [from, to) at every event that can change the classification and charges each
// piece to what classify says at its start.
func (d *decomposer) pieces(from, to time.Duration, r int, classify func(time.Duration) Part) {
	ev := []time.Duration{from}
	ev = d.down.events(d.svc, from, to, ev)
	ev = d.up.events(d.svc, from, to, ev)
	if r >= 0 {
		q := &d.reqs[r]
		for _, f := range d.flowsOf(q) {
			ev = appendEvents(ev, d.flowEvents(f), from, to)
		}
		if q.conn != nil && q.conn.arrivals != nil {
			for _, a := range q.conn.arrivals[q.Stream] {
				if a.at > from && a.at < to {
					ev = append(ev, a.at)
				}
			}
		}
		if ex := q.exchange; ex != nil {
			if ex.reqArrived > from && ex.reqArrived < to {
				ev = append(ev, ex.reqArrived)
			}
		}
		for _, k := range d.dnsRec {
			for _, t := range d.packetTimes(k) {
				if t > from && t < to {
					ev = append(ev, t)
				}
			}
		}
	}
	sort.Slice(ev, func(a, b int) bool { return ev[a] < ev[b] })
	for k, t := range ev {
		if k > 0 && t == ev[k-1] {
			continue
		}
		next := to
		for j := k + 1; j < len(ev); j++ {
			if ev[j] > t {
				next = ev[j]
				break
			}
		}
		if next > to {
			next = to
		}
		if next <= t {
			continue
		}
		d.charge(t, next, classify(t), r)
	}
}

func appendEvents(ev, all []time.Duration, from, to time.Duration) []time.Duration {
	k := sort.Search(len(all), func(k int) bool { return all[k] > from })
	for ; k < len(all) && all[k] < to; k++ {
		ev = append(ev, all[k])
	}
	return ev
}

func (d *decomposer) packetTimes(i int) [4]time.Duration {
	r := &d.pk[i]
	return [4]time.Duration{time.Duration(r.In), d.svc[i].start, d.svc[i].dep, time.Duration(r.Out)}
}

// flowEvents are the sorted instants at which any packet of f entered the link, started service,
// left the bottleneck or arrived.
func (d *decomposer) flowEvents(f *flow) []time.Duration {
	if ev, ok := d.events[f]; ok {
		return ev
	}
	var ev []time.Duration
	for dir := 0; dir < 2; dir++ {
		if t := f.tcp[dir]; t != nil {
			for _, r := range t.recovering {
				ev = append(ev, r[0], r[1])
			}
		}
		for _, i := range f.recs[dir] {
			t := d.packetTimes(i)
			ev = append(ev, t[:]...)
			ev = append(ev, time.Duration(d.pk[i].Out)+ackClock) // where a trigger stops releasing
		}
	}
	sort.Slice(ev, func(a, b int) bool { return ev[a] < ev[b] })
	d.events[f] = ev
	return ev
}

// flowsOf are the flows request q's classification reads: its connection's, and the flow of the
// connection it waited for.
func (d *decomposer) flowsOf(q *req) []*flow {
	if q.conn == nil || q.conn.flow == nil {
		return nil
	}
	return []*flow{q.conn.flow}
}

// busyOr is transfer while the bottleneck towards the client serialises the load's new data,
// recovery while it serialises a retransmission, else p. (The page's bytes move towards the
// client; the other direction carries requests, whose own wait requestAt follows, and
// acknowledgements.)
func (d *decomposer) busyOr(t time.Duration, p Part) Part {
	if k := d.down.servingAt(d.svc, t); k >= 0 {
		if d.isRetx(k) {
			return Recovery
		}
		return Transfer
	}
	return p
}

// isRetx says whether packet k is a TCP retransmission.
func (d *decomposer) isRetx(k int) bool {
	r := &d.pk[k]
	if r.Proto != pktlog.ProtoTCP || r.SeqLen() == 0 {
		return false
	}
	f := d.byKey[keyOf(r)]
	if f == nil || f.tcp[r.Dir] == nil {
		return false
	}
	t := f.tcp[r.Dir]
	j := sort.Search(len(t.segs), func(j int) bool { return t.segs[j].rec >= k })
	return j < len(t.segs) && t.segs[j].rec == k && t.segs[j].retx
}

// classify is what request i waited for at instant t of phase ph (docs/why.md, "What the critical
// request waited for").
func (d *decomposer) classify(i int, ph phase, t time.Duration) Part {
	r := &d.reqs[i]
	switch ph {
	case phBlocked:
		if c := r.conn; c != nil && c.opener >= 0 && c.opener != i {
			o := &d.reqs[c.opener]
			ready := o.send
			if ready < 0 {
				ready = o.end
			}
			switch {
			case t < ready && o.connect >= 0 && t >= o.connect:
				return d.setupAt(c, t)
			case t < ready && o.dns >= 0 && t >= o.dns:
				return d.dnsAt(o, t)
			}
		}
		return d.busyOr(t, Queueing)
	case phDNS:
		return d.dnsAt(r, t)
	case phSetup:
		if r.conn == nil {
			return d.busyOr(t, Setup)
		}
		return d.setupAt(r.conn, t)
	default:
		return d.exchangeAt(i, t)
	}
}

// dnsAt: the lookup's datagrams lost (the resolver's retry) or queued, else DNS.
func (d *decomposer) dnsAt(r *req, t time.Duration) Part {
	end := r.connect
	if end < 0 {
		end = r.send
	}
	for _, k := range d.dnsRec {
		p := &d.pk[k]
		if time.Duration(p.In) < r.dns-sendSlack || (end >= 0 && time.Duration(p.In) > end) {
			continue
		}
		if part, ok := d.packetState(k, t); ok {
			return part
		}
	}
	return d.busyOr(t, DNS)
}

// packetState: a dropped packet whose repair (the next delivered packet of its flow and direction)
// has not arrived is recovery; a packet in the queue is gateway.
func (d *decomposer) packetState(k int, t time.Duration) (Part, bool) {
	p := &d.pk[k]
	in := time.Duration(p.In)
	if in > t {
		return 0, false
	}
	if !p.Fate.Delivered() {
		if rep := d.repairOf(k); rep < 0 || time.Duration(d.pk[rep].Out) > t {
			return Recovery, true
		}
		return 0, false
	}
	if d.queuedBehindOthers(k, t) {
		return Gateway, true
	}
	return 0, false
}

// queuedBehindOthers: packet k waits in the gateway's queue at t while the bottleneck serialises
// another flow's packet. (Behind its own flow's packets it waits for its own bytes: transfer.)
func (d *decomposer) queuedBehindOthers(k int, t time.Duration) bool {
	if t < time.Duration(d.pk[k].In) || t >= d.svc[k].start {
		return false
	}
	b := &d.down
	if d.pk[k].Dir == pktlog.Up {
		b = &d.up
	}
	j := b.servingAt(d.svc, t)
	return j < 0 || keyOf(&d.pk[j]) != keyOf(&d.pk[k])
}

// repairOf is the packet that repaired dropped packet k: for TCP the first delivered
// transmission covering its first byte, for UDP the next delivered datagram of its flow and
// direction (QUIC sends lost frames again in new packets).
func (d *decomposer) repairOf(k int) int {
	p := &d.pk[k]
	f := d.byKey[keyOf(p)]
	if f == nil {
		return -1
	}
	if p.Proto == pktlog.ProtoTCP && f.tcp[p.Dir] != nil && p.SeqLen() > 0 {
		t := f.tcp[p.Dir]
		s := int64(int32(p.Seq - t.base))
		for _, a := range t.arrived {
			if sg := t.segs[a]; sg.start <= s && s < sg.end && d.pk[sg.rec].In >= p.In {
				return sg.rec
			}
		}
		return -1
	}
	for _, j := range f.recs[p.Dir] {
		if d.pk[j].In > p.In && d.pk[j].Fate.Delivered() {
			return j
		}
	}
	return -1
}

// setupAt: during a connection's handshake, a lost handshake packet not yet repaired is
// recovery, a handshake packet in the queue gateway, a busy bottleneck transfer, else setup.
func (d *decomposer) setupAt(c *connInfo, t time.Duration) Part {
	if c.flow == nil {
		return d.busyOr(t, Setup)
	}
	gateway := false
	for dir := 0; dir < 2; dir++ {
		for _, k := range c.flow.recs[dir] {
			if time.Duration(d.pk[k].In) > t {
				break
			}
			if d.pk[k].Proto == pktlog.ProtoTCP && d.pk[k].SeqLen() == 0 {
				continue // pure ACKs are nobody's wait
			}
			part, ok := d.packetState(k, t)
			if ok && part == Recovery {
				return Recovery
			}
			gateway = gateway || ok
		}
	}
	if gateway {
		return Gateway
	}
	return d.busyOr(t, Setup)
}
