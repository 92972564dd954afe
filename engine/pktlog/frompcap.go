package pktlog

import (
	"fmt"
	"io"
	"net/netip"

	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/pcap"
)

// FromPcap reads a capture of the client's side of the link (the emulator's client.pcap, or a
// trial's per-load <load>-client.pcap) into records, so that the packet log's own code —
// SummarizeUntil, and with it ToW — applies to a capture as it does to the in-memory log
// (docs/metrics.md, "Time on Wire from a capture"). Every packet goes through Parse, as Log.Add's
// do.
//
// A client-side capture holds the Up packets as they entered the link and the Down packets as
// they were delivered to the client, each stamped when the client's side saw it; so each record's
// In and Out are that instant (ns since the Unix epoch: Duration(ts.UnixNano())), its direction is
// Up when its source is client and Down otherwise, and its fate is Delivered. That is each packet's
// ClientTime as the log has it, so FirstPacket, FirstRequest and LastResponse — and ToW — are the
// log's; what a capture of one side cannot show are the link's drops (an Up packet the link
// dropped counts as delivered; a dropped Down packet is absent). IPv6 packets keep zero addresses,
// as in the log, and count as Down. The records are sorted by In.
func FromPcap(r io.Reader, client netip.Addr) ([]Record, error) {
	pkts, err := pcap.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("pktlog: %w", err)
	}
	var src [4]byte
	if client.Is4() {
		src = client.As4()
	}
	out := make([]Record, len(pkts))
	for i, p := range pkts {
		t := p.Time.UnixNano()
		rec := &out[i]
		rec.In, rec.Out, rec.Fate = t, t, link.Delivered
		Parse(p.Data, rec)
		if p.OrigLen > len(p.Data) {
			rec.IPLen = uint16(min(p.OrigLen, 0xffff)) // snapped: the header's length is the packet's
		}
		rec.Dir = Down
		if client.Is4() && rec.Src == src {
			rec.Dir = Up
		}
	}
	SortByIn(out)
	return out, nil
}
