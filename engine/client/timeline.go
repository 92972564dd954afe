package client

import (
	"time"

	"github.com/wirelab/wirelab/engine/internal/seam"
)

// timeline is the load's requests and connections as engine/why reads them (internal/seam's types;
// fetch --json's "timeline"): every boundary in microseconds since the load's first request; the initiator as the
// index of the earliest request for the referencing URL.
func (r *Result) timeline(all []*request, first time.Duration) *seam.Timeline {
	tl := &seam.Timeline{Conns: make([]seam.Conn, 0, len(r.Conns)), Requests: make([]seam.Request, 0, len(all))}
	for _, c := range r.Conns {
		transport := "tcp"
		if c.Protocol == string(H3) {
			transport = "udp"
		}
		wc := seam.Conn{ID: c.ID, Transport: transport, Local: c.Local, Remote: c.Remote}
		for _, a := range c.arrivals {
			wc.Arrivals = append(wc.Arrivals, [4]int64{a[0], int64((time.Duration(a[1]) - first) / time.Microsecond), a[2], a[3]})
		}
		tl.Conns = append(tl.Conns, wc)
	}
	us := func(d time.Duration) int64 {
		if d == unset {
			return seam.Unset
		}
		return int64((d - first) / time.Microsecond)
	}
	index := map[string]int{}
	for i, q := range all {
		u := q.url.String()
		if _, ok := index[u]; !ok {
			index[u] = i
		}
		w := seam.Request{URL: u, Initiator: -1, Conn: q.conn, Stream: q.streamID,
			Issued: us(q.issued), DNSStart: us(q.dnsStart), Connect: us(q.connectStart), SSLStart: us(q.sslStart),
			ConnectEnd: us(q.connectEnd), SendStart: us(q.sendStart), SendEnd: us(q.sendEnd),
			FirstByte: us(q.firstByte), End: us(q.end), Failed: q.err != nil}
		if p, ok := index[q.initiator]; ok && q.initiator != "" && p < i {
			w.Initiator = p
		}
		tl.Requests = append(tl.Requests, w)
	}
	return tl
}
