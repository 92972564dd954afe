package seam

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// LoaderResult is the JSON line `fetch --json` and `browse --json` print and a trial reads: the
// load record's loader fields, the load on CLOCK_MONOTONIC (so that the trial can place it on the
// emulator's clock and cut ToW at its end), and the loader's extras — everything else it reports
// (the engine loader's url, mode, dns_queries, retries, priority …; Chromium's impl, version,
// on_load_ms …) — in Client, which becomes the record's "client" object as it is.
type LoaderResult struct {
	Protocol  string    `json:"protocol"`
	StartedAt time.Time `json:"started_at"`
	PltMs     float64   `json:"plt_ms"`
	LoaderCounts
	Phases Phases `json:"phases_ms"`
	// QUICPacketsLost is the packets the client's QUIC stack declared lost (h3), when reported;
	// QUICLoss its loss recovery by kind (engine/internal/quicloss), nil when not reported.
	QUICPacketsLost int64 `json:"quic_packets_lost"`
	QUICLoss        *Retx `json:"quic_loss,omitempty"`
	// MonotonicStartNs and MonotonicEndNs are the load's first request and last byte on
	// CLOCK_MONOTONIC (0 when not reported).
	MonotonicStartNs int64 `json:"monotonic_start_ns"`
	MonotonicEndNs   int64 `json:"monotonic_end_ns"`
	// View is the view the load is: first, or repeat (the second load of the page in one
	// profile); "" from a loader that does not say (a first view).
	View string `json:"view,omitempty"`
	// The visual metrics (docs/vitals.md): Chromium's; nil from a loader that does not measure them.
	VisualMetrics
	Error  *string        `json:"error"`
	Client map[string]any `json:"client"`
	// Timeline is the load's requests and connections, microseconds from MonotonicStartNs: what
	// the trial's decomposition reads (engine/why); nil when the loader gave none.
	Timeline *Timeline `json:"timeline,omitempty"`
}

// LoaderCounts are the load record's counts a loader reports (LoaderResult's, the record's: this one
// declaration embedded in each).
type LoaderCounts struct {
	Connections   int64 `json:"connections"`
	TLSHandshakes int64 `json:"tls_handshakes"`
	TLSResumed    int64 `json:"tls_resumed"`
	Objects       int64 `json:"objects"`
	BodyBytes     int64 `json:"body_bytes"`
	PushedBytes   int64 `json:"pushed_bytes"`
	PushesUsed    int64 `json:"pushes_used"`
	PushesUnused  int64 `json:"pushes_unused"`
}

// VisualMetrics are a Chromium load's visual metrics (docs/vitals.md), as browse's summary, the
// loader's result and the load record name them (each embeds this one declaration); nil when not
// measured (and left out of the JSON: the engine's loader prints none).
type VisualMetrics struct {
	LCPMs              *float64     `json:"lcp_ms,omitempty"`      // Largest Contentful Paint, ms from the load's start
	LCPURL             *string      `json:"lcp_url,omitempty"`     // the LCP element's URL (images)
	LCPSizePx          *float64     `json:"lcp_size_px,omitempty"` // its painted area in CSS px
	LCPType            *string      `json:"lcp_type,omitempty"`    // image, text
	CLS                *float64     `json:"cls,omitempty"`         // Cumulative Layout Shift
	SpeedIndexMs       *float64     `json:"speed_index_ms,omitempty"`
	VisuallyCompleteMs *float64     `json:"visually_complete_ms,omitempty"`
	VisualProgress     [][2]float64 `json:"visual_progress,omitempty"` // [t_ms, percent] per frame that changed
}

// Timings are one request's phases in milliseconds with HAR 1.2 semantics, as both loaders
// report them; docs/metrics.md ("Loader timings") defines each boundary. -1 means the phase does
// not apply (blocked never is; dns, connect and ssl are -1 except on the request that opened its
// connection; ssl is -1 without TLS). As in HAR, connect includes ssl. Phases are contiguous, so
// their sum (ssl not counted twice) is the entry's time.
type Timings struct {
	Blocked float64 `json:"blocked"`
	DNS     float64 `json:"dns"`
	Connect float64 `json:"connect"`
	SSL     float64 `json:"ssl"`
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

// Total is the HAR entry time: the sum of the phases that apply, ssl excluded (it is inside connect).
func (t Timings) Total() float64 {
	sum := 0.0
	for _, v := range []float64{t.Blocked, t.DNS, t.Connect, t.Send, t.Wait, t.Receive} {
		if v > 0 {
			sum += v
		}
	}
	return sum
}

// Phases are the HAR phases summed over a load's objects, in ms: Timings' fields, a phase that
// did not apply (-1) adding nothing; connect includes ssl.
type Phases Timings

// Add adds a request's timings to the sums.
func (p *Phases) Add(t Timings) {
	pos := func(v float64) float64 { return max(v, 0) }
	p.Blocked += pos(t.Blocked)
	p.DNS += pos(t.DNS)
	p.Connect += pos(t.Connect)
	p.SSL += pos(t.SSL)
	p.Send += pos(t.Send)
	p.Wait += pos(t.Wait)
	p.Receive += pos(t.Receive)
}

// resultFields are LoaderResult's own JSON names (from its struct tags: declared once, above).
var resultFields = func() map[string]bool {
	out := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(LoaderResult{})) {
		if f.Anonymous {
			continue // an embedded struct's fields are listed themselves
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out[name] = true
	}
	return out
}()

// NewLoaderResult makes a loader's result from its summary (any struct that marshals to the
// record's field names, such as client.Summary or browser.Summary): the fields LoaderResult names
// are taken as they are, a "client" object of the summary is kept, and every other field joins
// it.
func NewLoaderResult(summary any, monotonicStartNs, monotonicEndNs int64) (LoaderResult, error) {
	b, err := json.Marshal(summary)
	if err != nil {
		return LoaderResult{}, err
	}
	var r LoaderResult
	if err := json.Unmarshal(b, &r); err != nil {
		return LoaderResult{}, fmt.Errorf("loader summary: %w", err)
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return LoaderResult{}, err
	}
	if r.Client == nil {
		r.Client = map[string]any{}
	}
	for k, v := range all {
		if !resultFields[k] {
			r.Client[k] = v
		}
	}
	r.MonotonicStartNs, r.MonotonicEndNs = monotonicStartNs, monotonicEndNs
	return r, nil
}

// ParseLoaderResult decodes a loader's JSON line.
func ParseLoaderResult(line []byte) (*LoaderResult, error) {
	var r LoaderResult
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("loader output: %w", err)
	}
	if r.Client == nil {
		r.Client = map[string]any{}
	}
	return &r, nil
}
