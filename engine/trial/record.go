package trial

import (
	"fmt"
	"math"
	"time"

	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/pktlog"
	"github.com/wirelab/wirelab/engine/why"
)

// Record is one line of loads.jsonl (schemas/load-record.schema.json).
type Record struct {
	TrialID          string  `json:"trial_id"`
	Index            int     `json:"index"`
	Protocol         string  `json:"protocol"`
	Repetition       int     `json:"repetition"`
	StartedAt        string  `json:"started_at"`
	TowMs            float64 `json:"tow_ms"`
	TowFirstPacketMs float64 `json:"tow_first_packet_ms"`
	PltMs            float64 `json:"plt_ms"`
	BytesDown        int64   `json:"bytes_down"`
	BytesUp          int64   `json:"bytes_up"`
	PacketsDown      int64   `json:"packets_down"`
	PacketsUp        int64   `json:"packets_up"`
	Retransmissions  int64   `json:"retransmissions"`
	DropsQueue       int64   `json:"drops_queue"`
	DropsLoss        int64   `json:"drops_loss"`
	seam.LoaderCounts
	// QUIC0RTTPackets counts the client's UDP datagrams in the load's window that carry a QUIC
	// 0-RTT packet (first or coalesced; pktlog.QUICPackets): early data seen on the wire, beside
	// the loader's own client.zero_rtt_connections. 0 for TCP protocols.
	QUIC0RTTPackets int64 `json:"quic_0rtt_packets"`
	// ServerCPUMs and ServerRSSPeakBytes are the server under test's cost during the load (its
	// control group); nil when the machine cannot measure it.
	ServerCPUMs        *float64 `json:"server_cpu_ms"`
	ServerRSSPeakBytes *int64   `json:"server_rss_peak_bytes"`
	Gateway            *Gateway `json:"gateway"`
	// View is the view the load is (client.view); the visual metrics are Chromium's (docs/vitals.md),
	// nil when not measured; Frames is the directory of the load's frames (capture.screenshots).
	View string `json:"view"`
	seam.VisualMetrics
	Frames *string `json:"frames"`
	Phases Phases  `json:"phases_ms"`
	// Why is the load's time on the wire split into mechanisms (engine/why, docs/metrics.md): nil
	// for a load with an error or without a Time on Wire. WhyPath is its critical path.
	Why     *why.Parts   `json:"why"`
	WhyPath []WhySegment `json:"why_path,omitempty"`
	// Retx are the retransmissions by kind (retx_fast, retx_timeout, retx_tlp, retx_spurious).
	why.Retx
	HAR    *string        `json:"har"`
	Pcap   *PcapPaths     `json:"pcap"`
	Client map[string]any `json:"client"`
	Error  *string        `json:"error"`
}

// Gateway is what the emulated gateway's queue did to the load's packets (docs/metrics.md,
// "The gateway"): drops by cause and ECN marks per direction, how long delivered packets waited in
// the queue, and the flows that lost (or had marked) packets.
type Gateway struct {
	Up   GatewayDir `json:"up"`
	Down GatewayDir `json:"down"`
	// Flows counts the load's TCP and UDP flows; FlowsCongested those the gateway dropped or
	// marked packets of; MaxFlowDrops the most drops of one of them.
	Flows          int   `json:"flows"`
	FlowsCongested int   `json:"flows_congested"`
	MaxFlowDrops   int64 `json:"max_flow_drops"`
	// CongestedFlows lists them, most drops first (at most MaxCongestedFlows).
	CongestedFlows []pktlog.Flow `json:"congested_flows"`
}

// GatewayDir is one direction of Gateway.
type GatewayDir struct {
	DropsTail     int64          `json:"drops_tail"`
	DropsAQM      int64          `json:"drops_aqm"`
	DropsOverflow int64          `json:"drops_overflow"`
	Marks         int64          `json:"marks"`
	SojournMs     pktlog.Sojourn `json:"sojourn_ms"`
}

// MaxCongestedFlows bounds Gateway.CongestedFlows.
const MaxCongestedFlows = 32

func gatewayOf(w pktlog.Summary) *Gateway {
	dir := func(d pktlog.DirStats) GatewayDir {
		return GatewayDir{DropsTail: d.DropsTail, DropsAQM: d.DropsAQM, DropsOverflow: d.DropsOverflow, Marks: d.Marks, SojournMs: d.Sojourn}
	}
	g := &Gateway{Up: dir(w.Up), Down: dir(w.Down), Flows: w.Flows, FlowsCongested: len(w.Congested), CongestedFlows: w.Congested}
	if len(g.CongestedFlows) > MaxCongestedFlows {
		g.CongestedFlows = g.CongestedFlows[:MaxCongestedFlows]
	}
	if g.CongestedFlows == nil {
		g.CongestedFlows = []pktlog.Flow{}
	}
	if len(w.Congested) > 0 {
		g.MaxFlowDrops = w.Congested[0].Drops
	}
	return g
}

// Phases are the HAR phases summed over a load's objects, in ms (the loaders' own: the seam's).
type Phases = seam.Phases

// PcapPaths are a load's captures, relative to the trial directory.
type PcapPaths struct {
	Client string `json:"client"`
	Server string `json:"server"`
	// LoadEndNs is when the load completed on the captures' clock (ns since the Unix epoch): ToW
	// from the client's capture ends there (pktlog.FromPcap, then SummarizeUntil); 0 when the
	// loader reported no end.
	LoadEndNs int64 `json:"load_end_ns,omitempty"`
}

// FetchResult is a loader's result (`fetch --json`, `browse --json`): the seam's LoaderResult.
type FetchResult = seam.LoaderResult

// BuildRecord makes a load's record from the loader's result (nil when the loader printed none)
// and the load's packet window. failure, when set, is why the load failed outside the loader (the
// process crashed, timed out …); it takes precedence over the loader's own error.
func BuildRecord(trialID string, l Load, started time.Time, f *FetchResult, w pktlog.Summary, failure string) Record {
	r := Record{
		TrialID: trialID, Index: l.Index, Protocol: l.Protocol, Repetition: l.Repetition, View: "first",
		BytesDown: w.Down.Bytes, BytesUp: w.Up.Bytes, PacketsDown: w.Down.Packets, PacketsUp: w.Up.Packets,
		Retransmissions: w.Retransmissions(),
		DropsQueue:      w.Up.DropsQueue + w.Down.DropsQueue,
		DropsLoss:       w.Up.DropsLoss + w.Down.DropsLoss,
		Gateway:         gatewayOf(w),
		Client:          map[string]any{},
	}
	if tow, ok := w.ToW(); ok {
		r.TowMs = ms(tow)
	}
	if tow, ok := w.ToWFirstPacket(); ok {
		r.TowFirstPacketMs = ms(tow)
	}
	if f != nil {
		if !f.StartedAt.IsZero() {
			started = f.StartedAt
		}
		r.PltMs = round3(f.PltMs)
		r.LoaderCounts = f.LoaderCounts
		r.Phases = rounded(f.Phases)
		if f.View != "" {
			r.View = f.View
		}
		r.VisualMetrics = f.VisualMetrics
		if len(r.VisualProgress) == 0 {
			r.VisualProgress = nil
		}
		// QUIC encrypts its packet numbers, so the packet log cannot count h3 retransmissions: the
		// stacks' own count of packets declared lost stands in (docs/metrics.md).
		r.Retransmissions += f.QUICPacketsLost
		for k, v := range f.Client {
			r.Client[k] = v
		}
		if f.Error != nil {
			e := *f.Error
			r.Error = &e
		}
	}
	if failure != "" {
		r.Error = &failure
	}
	if r.Error == nil {
		if _, ok := w.ToW(); !ok {
			e := "no request and response data crossed the emulated link during the load"
			r.Error = &e
		}
	}
	r.StartedAt = started.UTC().Format(time.RFC3339Nano)
	return r
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

// round3 keeps microseconds: the clocks behind these figures resolve nothing finer that matters.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func rounded(p Phases) Phases {
	return Phases{DNS: round3(p.DNS), Connect: round3(p.Connect), SSL: round3(p.SSL), Send: round3(p.Send),
		Wait: round3(p.Wait), Receive: round3(p.Receive), Blocked: round3(p.Blocked)}
}

// zeroRTTDisagreement checks the loader's count of accepted 0-RTT connections against the 0-RTT
// datagrams the packet log saw: a connection whose early data the server accepted sent at least
// one. (The other way round is no disagreement: a client may send 0-RTT data the server rejects.)
// "" when they agree.
func zeroRTTDisagreement(rec Record) string {
	conns, _ := rec.Client["zero_rtt_connections"].(float64)
	if n, ok := rec.Client["zero_rtt_connections"].(int); ok {
		conns = float64(n)
	}
	if conns > 0 && rec.QUIC0RTTPackets == 0 {
		return fmt.Sprintf("the loader reports %g connections with accepted 0-RTT data, but the packet log saw no 0-RTT datagram from the client", conns)
	}
	return ""
}
