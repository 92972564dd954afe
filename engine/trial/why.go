package trial

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/pktlog"
	"github.com/wirelab/wirelab/engine/why"
)

// whyPath is the path's bottleneck per direction as engine/why replays it: the link model's own
// serialisers for the profile's rate or trace.
func whyPath(r profile.Resolved) (why.Path, error) {
	upTrace, downTrace, err := r.LoadTraces()
	if err != nil {
		return why.Path{}, err
	}
	b := func(d profile.Direction, tr *profile.Trace) why.Bottleneck {
		switch {
		case tr != nil:
			return why.Bottleneck{NewSerializer: func() why.Serializer { return link.NewTraceRate(tr) }}
		case d.RateBPS > 0:
			return why.Bottleneck{NewSerializer: func() why.Serializer { return link.NewConstantRate(d.RateBPS) }}
		}
		return why.Bottleneck{}
	}
	return why.Path{Up: b(r.Up, upTrace), Down: b(r.Down, downTrace)}, nil
}

// others are the records of the window that Own left out, in order.
func others(all, own []pktlog.Record) []pktlog.Record {
	if len(all) == len(own) {
		return nil
	}
	mine := map[flow]bool{}
	for i := range own {
		mine[flowOf(&own[i])] = true
	}
	var out []pktlog.Record
	for i := range all {
		if r := &all[i]; (r.Proto == pktlog.ProtoTCP || r.Proto == pktlog.ProtoUDP) && !mine[flowOf(r)] {
			out = append(out, *r)
		}
	}
	return out
}

// WhyInput is a load's decomposition input from its window and the loader's result (nil when it
// printed none); clock places the loader's CLOCK_MONOTONIC instants on the emulator's clock.
func WhyInput(path why.Path, all, own []pktlog.Record, w pktlog.Summary, f *FetchResult, toEmulator func(int64) time.Duration) why.Input {
	in := why.Input{Packets: own, Others: others(all, own), Path: path, Start: w.FirstPacket, End: w.LastResponse}
	if f != nil && f.QUICLoss != nil {
		in.QUIC = *f.QUICLoss
	}
	if f != nil && f.Timeline != nil && f.MonotonicStartNs > 0 {
		in.Timeline = *f.Timeline
		in.Origin = toEmulator(f.MonotonicStartNs)
	}
	return in
}

// setWhy writes the decomposition into the record: the parts (when the load has a Time on Wire
// and no error), the retransmissions by kind, and the critical path in milliseconds from the
// load's start (the loader's first request, the HAR page's start; the first packet without a
// timeline).
func setWhy(rec *Record, in why.Input, res why.Result) {
	rec.Retx = res.Retx
	if rec.Error != nil || in.End <= in.Start {
		return
	}
	parts := res.Parts
	rec.Why = &parts
	t0 := in.Start
	if in.Timeline.Requests != nil {
		t0 = in.Origin
	}
	rel := func(d time.Duration) float64 { return math.Round(float64(d-t0)/float64(time.Microsecond)) / 1000 }
	rec.WhyPath = make([]WhySegment, 0, len(res.Path))
	for _, s := range res.Path {
		rec.WhyPath = append(rec.WhyPath, WhySegment{From: rel(s.From), To: rel(s.To), Part: s.Part, Request: s.Request})
	}
}

// WhySegment is a piece of a load's critical path in the record: [from_ms, to_ms) from the load's
// start, its part's key and the request it belongs to (its index in the load's HAR entries; -1
// none).
type WhySegment struct {
	From    float64
	To      float64
	Part    why.Part
	Request int
}

// MarshalJSON writes [from_ms, to_ms, part, request]: compact, one segment per array.
func (s WhySegment) MarshalJSON() ([]byte, error) {
	return json.Marshal([4]any{s.From, s.To, s.Part, s.Request})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *WhySegment) UnmarshalJSON(b []byte) error {
	var a [4]json.RawMessage
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	for i, dst := range []any{&s.From, &s.To, &s.Part, &s.Request} {
		if err := json.Unmarshal(a[i], dst); err != nil {
			return fmt.Errorf("why_path segment: %w", err)
		}
	}
	return nil
}

// WhyDumpEnv names a directory into which a trial writes each load's decomposition input (the
// packet records, the loader's timeline and the network profile): `wirelab-engine why FILE`
// decomposes it again and prints its critical path. For looking into a decomposition; off unless
// set.
const WhyDumpEnv = "WIRELAB_WHY_DUMP"

// WhyDump is the file WhyDumpEnv makes per load.
type WhyDump struct {
	Network string          `json:"network"` // the canonical profile string (the path's bottleneck)
	Input   why.Input       `json:"input"`   // Path omitted: rebuilt from Network
	Record  json.RawMessage `json:"record"`  // the load record as written
}

func writeWhyDump(dir, trialID, name, network string, in why.Input, rec Record) error {
	rb, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	b, err := json.Marshal(WhyDump{Network: network, Input: in, Record: rb})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, trialID+"-"+name+".json"), b, 0o644)
}

// ReadWhyDump reads a WhyDumpEnv file and rebuilds its input's path.
func ReadWhyDump(path string) (*WhyDump, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d WhyDump
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r, err := profile.Parse(d.Network)
	if err != nil {
		return nil, fmt.Errorf("%s: network: %w", path, err)
	}
	if d.Input.Path, err = whyPath(r); err != nil {
		return nil, err
	}
	return &d, nil
}
