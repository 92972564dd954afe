package why

import (
	"container/heap"
	"net/netip"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/pkttest"
	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/pktlog"
)

// A small TCP in virtual time, for stories with a known decomposition: a loader (client) that
// opens connections, sends requests and acknowledges every segment at once; a server that answers
// after a think time with a Reno-like sender (initial window, slow start, fast retransmit on three
// duplicate ACKs, a fixed retransmission timeout); a path with the link model's own serialisers
// and a fixed delay per direction. Drops are scripted. It writes the packet log the emulator
// would, and the loader's timeline. With a gateway (withGateway) the down direction is the link
// model's own Direction — its queue discipline, rate and delay — fed real packets, and other
// traffic can share it (flood).

const simMSS = 1460

type simPath struct {
	delayUp, delayDown time.Duration
	rateUp, rateDown   int64 // bits/s; 0 unlimited
}

func (p simPath) bottlenecks() Path {
	b := func(rate int64) Bottleneck {
		if rate == 0 {
			return Bottleneck{}
		}
		return Bottleneck{NewSerializer: func() Serializer { return link.NewConstantRate(rate) }}
	}
	return Path{Up: b(p.rateUp), Down: b(p.rateDown)}
}

type simEvent struct {
	at  time.Duration
	seq int
	fn  func()
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type sim struct {
	now      time.Duration
	q        simQueue
	seq      int
	path     simPath
	serUp    Serializer
	serDown  Serializer
	recs     []pktlog.Record
	iw       float64
	rto      time.Duration
	think    time.Duration
	h2       bool // requests of a connection go in one segment, answered as one byte stream
	conns    []*simConn
	reqs     []*simReq
	drop     func(p simPacket) bool
	waiting  []*simReq // requests waiting for a connection (HTTP/1.x)
	maxConns int

	// The down direction through the link model (nil: the sim's own serialiser and delay).
	gwDown *link.Direction
	inGw   map[*link.Packet]gwPacket
	polls  map[time.Duration]bool
	others []pktlog.Record // records of the traffic that is not the load's (flood)
}

// gwPacket is a packet inside the gateway: its record (in recs, or in others) and, for the load's
// packets, what the receiver gets.
type gwPacket struct {
	rec   int
	other bool
	p     simPacket
}

type simPacket struct {
	conn  *simConn
	dir   pktlog.Dir
	seq   int64 // relative to the sender's ISN
	ack   int64 // relative to the other side's ISN
	n     int
	flags uint8
	nth   int // transmissions of this sequence start so far, this one included
}

type simReq struct {
	idx       int
	respLen   int64
	stream    int64
	conn      *simConn
	issued    time.Duration
	connect   time.Duration
	connEnd   time.Duration
	send      time.Duration
	firstByte time.Duration
	end       time.Duration
	respStart int64 // in the server's relative sequence
	respEnd   int64
	initiator int    // -1
	onEnd     func() // called when the response is complete
}

type simConn struct {
	s            *sim
	id           int
	cport        uint16
	queue        []*simReq // to send, in order
	active       []*simReq // sent, not complete
	established  bool
	busy         bool
	rcvNxt       int64
	ooo          [][2]int64
	srvRcvNxt    int64
	una, nxt     int64
	limit        int64 // response bytes produced: sequence 1 … limit
	cwnd         float64
	dupacks      int
	rtoAt        time.Duration
	sent         map[int64]int
	clientSeq    int64
	firstArrival map[*simReq]bool
}

func newSim(p simPath) *sim {
	s := &sim{path: p, iw: 10, rto: 300 * time.Millisecond, maxConns: 6, drop: func(simPacket) bool { return false }}
	if p.rateUp > 0 {
		s.serUp = link.NewConstantRate(p.rateUp)
	}
	if p.rateDown > 0 {
		s.serDown = link.NewConstantRate(p.rateDown)
	}
	return s
}

func (s *sim) at(t time.Duration, fn func()) {
	s.seq++
	heap.Push(&s.q, simEvent{t, s.seq, fn})
}

func (s *sim) run() {
	for n := 0; s.q.Len() > 0; n++ {
		if n > 1_000_000 || s.now > time.Minute {
			panic("sim: runaway")
		}
		e := heap.Pop(&s.q).(simEvent)
		s.now = e.at
		e.fn()
	}
}

var (
	simClient = [4]byte{10, 77, 0, 2}
	simServer = [4]byte{10, 77, 1, 1}
)

const (
	simClientISN = 1000
	simServerISN = 50000
)

// transmit puts p on the path now: a record, and its delivery unless it is dropped.
func (s *sim) transmit(p simPacket) {
	c := p.conn
	r := pktlog.Record{In: int64(s.now), Dir: p.dir, Proto: pktlog.ProtoTCP, Flags: p.flags, Payload: uint16(p.n)}
	r.IPLen = uint16(40 + p.n)
	if p.flags&pktlog.FlagSYN != 0 {
		r.IPLen += 20
	}
	if p.dir == pktlog.Up {
		r.Src, r.Dst, r.SrcPort, r.DstPort = simClient, simServer, c.cport, 80
		r.Seq, r.Ack = uint32(simClientISN+p.seq), uint32(simServerISN+p.ack)
	} else {
		r.Src, r.Dst, r.SrcPort, r.DstPort = simServer, simClient, 80, c.cport
		r.Seq, r.Ack = uint32(simServerISN+p.seq), uint32(simClientISN+p.ack)
	}
	if s.drop(p) {
		r.Fate, r.Out = link.DroppedLoss, r.In
		s.recs = append(s.recs, r)
		return
	}
	if p.dir == pktlog.Down && s.gwDown != nil {
		src := netip.AddrPortFrom(netip.AddrFrom4(simServer), 80)
		dst := netip.AddrPortFrom(netip.AddrFrom4(simClient), c.cport)
		pkt := pkttest.TCP(src, dst, r.Seq, r.Ack, p.flags, make([]byte, p.n))
		r.IPLen = uint16(len(pkt))
		s.recs = append(s.recs, r)
		s.push(pkt, gwPacket{rec: len(s.recs) - 1, p: p})
		return
	}
	ser, delay := s.serUp, s.path.delayUp
	if p.dir == pktlog.Down {
		ser, delay = s.serDown, s.path.delayDown
	}
	dep := s.now
	if ser != nil {
		dep = ser.Depart(s.now, int(r.IPLen))
	}
	r.Out = int64(dep + delay)
	s.recs = append(s.recs, r)
	s.at(time.Duration(r.Out), func() {
		if p.dir == pktlog.Up {
			c.serverGot(p)
		} else {
			c.clientGot(p)
		}
	})
}

// withGateway sends the down direction through the link model's Direction with discipline d (its
// default parameters) and a limit of 1000 packets, at the path's down rate and delay.
func (s *sim) withGateway(t testing.TB, d string) {
	t.Helper()
	info, ok := profile.LookupDiscipline(d)
	if !ok {
		t.Fatalf("no discipline %q", d)
	}
	dir, err := link.NewDirection(link.Config{Delay: s.path.delayDown, RateBPS: s.path.rateDown,
		Queue: profile.QueueLimit{Packets: 1000}, Discipline: info.Defaults, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.gwDown, s.serDown = dir, nil
	s.inGw, s.polls = map[*link.Packet]gwPacket{}, map[time.Duration]bool{}
}

// flood puts n datagrams of size bytes (IP) from another server to the client into the gateway at
// t: traffic that is not the load's.
func (s *sim) flood(t time.Duration, n, size int) {
	s.at(t, func() {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 77, 1, 9}), 9000)
		dst := netip.AddrPortFrom(netip.AddrFrom4(simClient), 9000)
		for range n {
			pkt := pkttest.UDP(src, dst, make([]byte, size-28))
			r := pktlog.Record{In: int64(s.now), Dir: pktlog.Down}
			pktlog.Parse(pkt, &r)
			s.others = append(s.others, r)
			s.push(pkt, gwPacket{rec: len(s.others) - 1, other: true})
		}
	})
}

// push offers a packet to the gateway now; its record is completed when the link is done with it.
func (s *sim) push(pkt []byte, g gwPacket) {
	lp := &link.Packet{Data: pkt}
	if f := s.gwDown.Push(s.now, lp); f != link.Accepted {
		r := s.gwRecord(g)
		r.Fate, r.Out = f, r.In
		return
	}
	s.inGw[lp] = g
	s.pollGateway()
}

func (s *sim) gwRecord(g gwPacket) *pktlog.Record {
	if g.other {
		return &s.others[g.rec]
	}
	return &s.recs[g.rec]
}

// pollGateway arranges to take what the gateway releases at its next deadline.
func (s *sim) pollGateway() {
	at, ok := s.gwDown.NextDeadline()
	if !ok {
		return
	}
	at = max(at, s.now)
	if s.polls[at] {
		return
	}
	s.polls[at] = true
	s.at(at, func() {
		delete(s.polls, at)
		for {
			lp, ok := s.gwDown.Pop(s.now)
			if !ok {
				break
			}
			g := s.inGw[lp]
			delete(s.inGw, lp)
			r := s.gwRecord(g)
			r.Fate, r.Out = lp.Fate(), int64(lp.Due())
			r.SojournUS = uint32(lp.Sojourn() / time.Microsecond)
			if !g.other && lp.Fate().Delivered() {
				g.p.conn.clientGot(g.p)
			}
		}
		s.pollGateway()
	})
}

// request adds a request issued at t with a response of respLen bytes.
func (s *sim) request(t time.Duration, respLen int64, stream int64) *simReq {
	q := &simReq{idx: len(s.reqs), respLen: respLen, stream: stream, issued: t, connect: -1, connEnd: -1,
		send: -1, firstByte: -1, end: -1, initiator: -1}
	s.reqs = append(s.reqs, q)
	s.at(t, func() { s.assign(q) })
	return q
}

// assign gives a request a connection: HTTP/2 shares one; HTTP/1.x opens up to maxConns and
// queues the rest for the first that frees up.
func (s *sim) assign(q *simReq) {
	if s.h2 && len(s.conns) > 0 {
		c := s.conns[0]
		q.conn = c
		c.queue = append(c.queue, q)
		if c.established {
			c.sendQueued()
		}
		return
	}
	if !s.h2 {
		for _, c := range s.conns {
			if c.established && !c.busy {
				q.conn = c
				c.queue = append(c.queue, q)
				c.sendQueued()
				return
			}
		}
		if len(s.conns) >= s.maxConns {
			s.waiting = append(s.waiting, q)
			return
		}
	}
	c := &simConn{s: s, id: len(s.conns) + 1, cport: uint16(40000 + len(s.conns)), cwnd: s.iw, sent: map[int64]int{},
		firstArrival: map[*simReq]bool{}, rtoAt: -1}
	s.conns = append(s.conns, c)
	q.conn, q.connect = c, s.now
	c.queue = append(c.queue, q)
	s.transmit(simPacket{conn: c, dir: pktlog.Up, flags: pktlog.FlagSYN, nth: 1})
}

func (c *simConn) sendQueued() {
	s := c.s
	if len(c.queue) == 0 || (!s.h2 && c.busy) {
		return
	}
	batch := c.queue
	if !s.h2 {
		batch = c.queue[:1]
	}
	c.queue = c.queue[len(batch):]
	n := 100 * len(batch)
	for _, q := range batch {
		q.send = s.now
		c.active = append(c.active, q)
	}
	c.busy = true
	s.transmit(simPacket{conn: c, dir: pktlog.Up, seq: 1 + c.clientSeq, ack: c.rcvNxt, n: n, flags: pktlog.FlagACK | pktlog.FlagPSH, nth: 1})
	c.clientSeq += int64(n)
}

// clientGot handles a packet arriving at the client.
func (c *simConn) clientGot(p simPacket) {
	s := c.s
	if p.flags&pktlog.FlagSYN != 0 {
		c.established, c.rcvNxt = true, 1
		for _, q := range c.queue {
			if q.connect >= 0 {
				q.connEnd = s.now
			}
		}
		s.transmit(simPacket{conn: c, dir: pktlog.Up, seq: 1, ack: 1, flags: pktlog.FlagACK, nth: 1})
		c.sendQueued()
		return
	}
	if p.n == 0 {
		return
	}
	end := p.seq + int64(p.n)
	for _, q := range c.active {
		if q.firstByte < 0 && q.respStart < end && p.seq < q.respEnd {
			q.firstByte = s.now
		}
	}
	if p.seq <= c.rcvNxt {
		c.rcvNxt = max(c.rcvNxt, end)
		for len(c.ooo) > 0 && c.ooo[0][0] <= c.rcvNxt {
			c.rcvNxt = max(c.rcvNxt, c.ooo[0][1])
			c.ooo = c.ooo[1:]
		}
	} else {
		c.ooo = addRange(c.ooo, p.seq, end)
	}
	s.transmit(simPacket{conn: c, dir: pktlog.Up, seq: 1 + c.clientSeq, ack: c.rcvNxt, flags: pktlog.FlagACK, nth: 1})
	var still []*simReq
	for _, q := range c.active {
		if q.respEnd > 0 && c.rcvNxt >= q.respEnd {
			q.end = s.now
			if q.onEnd != nil {
				q.onEnd()
			}
			continue
		}
		still = append(still, q)
	}
	c.active = still
	if len(c.active) == 0 && c.busy {
		c.busy = false
		if len(s.waiting) > 0 && !s.h2 {
			q := s.waiting[0]
			s.waiting = s.waiting[1:]
			q.conn = c
			c.queue = append(c.queue, q)
		}
		c.sendQueued()
	}
}

// serverGot handles a packet arriving at the server.
func (c *simConn) serverGot(p simPacket) {
	s := c.s
	if p.flags&pktlog.FlagSYN != 0 {
		c.srvRcvNxt, c.una, c.nxt = 1, 1, 1
		s.transmit(simPacket{conn: c, dir: pktlog.Down, ack: 1, flags: pktlog.FlagSYN | pktlog.FlagACK, nth: 1})
		return
	}
	if p.n > 0 && p.seq == c.srvRcvNxt {
		c.srvRcvNxt += int64(p.n)
		reqs := append([]*simReq(nil), c.active...)
		s.at(s.now+s.think, func() {
			for _, q := range reqs {
				if q.respEnd > 0 {
					continue
				}
				q.respStart = 1 + c.limit
				c.limit += q.respLen
				q.respEnd = 1 + c.limit
			}
			if s.h2 { // one byte stream: every stream ends with it
				for _, q := range reqs {
					q.respStart, q.respEnd = 1, 1+c.limit
				}
			}
			c.trySend()
		})
	}
	c.onAck(p)
}

func (c *simConn) onAck(p simPacket) {
	if p.flags&pktlog.FlagACK == 0 {
		return
	}
	switch {
	case p.ack > c.una:
		c.una = p.ack
		c.dupacks = 0
		c.cwnd++
		if c.una < c.nxt {
			c.armRTO()
		} else {
			c.rtoAt = -1
		}
		c.trySend()
	case p.ack == c.una && c.nxt > c.una && p.n == 0:
		c.dupacks++
		if c.dupacks == 3 {
			c.cwnd = max(c.cwnd/2, 2)
			c.retransmit(c.una)
		}
	}
}

func (c *simConn) armRTO() {
	s := c.s
	at := s.now + s.rto
	c.rtoAt = at
	s.at(at, func() {
		if c.rtoAt != at || c.una >= c.nxt {
			return
		}
		c.cwnd = 1
		c.retransmit(c.una)
		c.armRTO()
	})
}

func (c *simConn) segment(seq int64) {
	n := min(int64(simMSS), 1+c.limit-seq)
	c.sent[seq]++
	c.s.transmit(simPacket{conn: c, dir: pktlog.Down, seq: seq, ack: c.srvRcvNxt, n: int(n), flags: pktlog.FlagACK, nth: c.sent[seq]})
}

func (c *simConn) retransmit(seq int64) { c.segment(seq) }

func (c *simConn) trySend() {
	for c.nxt < 1+c.limit && float64(c.nxt-c.una) < c.cwnd*simMSS {
		seq := c.nxt
		c.nxt = min(c.nxt+simMSS, 1+c.limit)
		c.segment(seq)
		if c.rtoAt < 0 {
			c.armRTO()
		}
	}
}

// input is the Decompose input of what the simulation wrote.
func (s *sim) input(t testing.TB) (Input, pktlog.Summary) {
	t.Helper()
	sum := pktlog.Summarize(s.recs)
	us := func(d time.Duration) int64 {
		if d < 0 {
			return Unset
		}
		return int64(d / time.Microsecond)
	}
	var tl Timeline
	for _, c := range s.conns {
		tl.Conns = append(tl.Conns, Conn{ID: c.id, Transport: "tcp", Local: "10.77.0.2:" + itoa(int(c.cport)), Remote: "10.77.1.1:80"})
	}
	for _, q := range s.reqs {
		if q.end < 0 {
			t.Fatalf("request %d did not complete", q.idx)
		}
		r := Request{URL: "http://s1.wirelab.test/o" + itoa(q.idx), Initiator: q.initiator, Stream: q.stream,
			Issued: us(q.issued), DNSStart: Unset, Connect: us(q.connect), SSLStart: Unset, ConnectEnd: us(q.connEnd),
			SendStart: us(q.send), SendEnd: us(q.send), FirstByte: us(q.firstByte), End: us(q.end)}
		if q.conn != nil {
			r.Conn = q.conn.id
		}
		tl.Requests = append(tl.Requests, r)
	}
	return Input{Packets: s.recs, Others: s.others, Path: s.path.bottlenecks(), Timeline: tl, Start: sum.FirstPacket, End: sum.LastResponse}, sum
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
