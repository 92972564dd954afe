package browser

import (
	"math"
	"net"
	"strconv"

	"github.com/wirelab/wirelab/engine/why"
)

// timeline is the load's requests as engine/why reads them, from the entries' contiguous phases
// (microseconds since the first request). Chromium's connections are known by CDP's id and their
// remote address only: the trial matches each to the flow that opened when its first request's
// connect phase started.
func (r *Result) timeline() *why.Timeline {
	tl := &why.Timeline{Requests: make([]why.Request, 0, len(r.Entries))}
	us := func(msv float64) int64 { return int64(math.Round(msv * 1000)) }
	index := map[string]int{}
	conns := map[int]bool{}
	for i, e := range r.Entries {
		if _, ok := index[e.URL]; !ok {
			index[e.URL] = i
		}
		w := why.Request{URL: e.URL, Initiator: -1, Stream: -1, Issued: us(e.StartMS), DNSStart: why.Unset,
			Connect: why.Unset, SSLStart: why.Unset, ConnectEnd: why.Unset, SendStart: why.Unset, SendEnd: why.Unset,
			FirstByte: why.Unset, End: why.Unset, Failed: e.Error != ""}
		if e.Initiator != nil {
			if p, ok := index[e.Initiator.URL]; ok && p < i {
				w.Initiator = p
			}
		}
		if e.EndMS >= 0 {
			w.End = us(e.EndMS)
		}
		t := e.Timings
		at := e.StartMS + max(t.Blocked, 0)
		if t.DNS >= 0 {
			w.DNSStart = us(at)
			at += t.DNS
		}
		if t.Connect >= 0 {
			w.Connect = us(at)
			at += t.Connect
			w.ConnectEnd = us(at)
			if t.SSL >= 0 {
				w.SSLStart = us(at - t.SSL)
			}
		}
		if e.FirstByteMS >= 0 {
			w.SendStart = us(at)
			at += max(t.Send, 0)
			w.SendEnd = us(at)
			w.FirstByte = us(e.FirstByteMS)
		}
		if id, err := strconv.Atoi(e.Connection); err == nil && e.RemoteIP != "" {
			w.Conn = id
			if !conns[id] {
				conns[id] = true
				transport := "tcp"
				if e.Protocol == "h3" {
					transport = "udp"
				}
				tl.Conns = append(tl.Conns, why.Conn{ID: id, Transport: transport,
					Remote: net.JoinHostPort(e.RemoteIP, strconv.Itoa(e.RemotePort))})
			}
		}
		tl.Requests = append(tl.Requests, w)
	}
	return tl
}
