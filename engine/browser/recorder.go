package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/performancetimeline"
	"github.com/chromedp/cdproto/tracing"
)

// request is one network request as CDP's Network events describe it. Times are CDP monotonic
// timestamps in seconds (base::TimeTicks, the clock of every Network, Page and trace event).
type request struct {
	id        string
	url       string
	method    string
	rtype     string
	initiator *network.Initiator
	priority  string
	frame     string
	loader    string
	issued    float64
	wall      time.Time
	headers   map[string]any

	resp      *network.Response
	firstData float64 // first dataReceived (0 = none)
	bodyBytes int64
	end       float64
	transfer  float64
	failure   string
	blocked   bool // blocked by Network.setBlockedURLs (never sent)
	done      bool
}

// recorder collects the events of one load. CDP events arrive on chromedp's goroutine; the load
// goroutine waits on notify and reads under mu.
type recorder struct {
	mu       sync.Mutex
	notify   chan struct{}
	reqs     map[string]*request
	order    []*request
	redirect map[string]int // redirects seen per request id
	life     []lifecycle
	loadAt   float64 // Page.loadEventFired
	dclAt    float64 // Page.domContentEventFired
	frame    string
	loader   string

	trace        bool // keep every trace event (graph recording)
	traced       bool // a trace runs: keep the visual events
	traceEvents  []TraceEvent
	visualEvents []TraceEvent
	lcpEntries   []lcpEntry // PerformanceTimeline's LCP entries of the main frame
	traceDone    bool
	traceDecodeE error
}

type lifecycle struct {
	frame, loader, name string
	at                  float64
}

func newRecorder(trace, traced bool) *recorder {
	return &recorder{notify: make(chan struct{}, 1), reqs: map[string]*request{}, redirect: map[string]int{},
		trace: trace, traced: traced || trace}
}

func (r *recorder) poke() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *recorder) setMain(frame, loader string) {
	r.mu.Lock()
	r.frame, r.loader = frame, loader
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) onEvent(ev any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.poke()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		id := string(e.RequestID)
		if prev := r.reqs[id]; prev != nil && e.RedirectResponse != nil {
			// The same request id continues after a redirect: close the redirected hop.
			prev.resp = e.RedirectResponse
			prev.end, prev.done = float64(e.Timestamp), true
			r.redirect[id]++
			prev.id = fmt.Sprintf("%s#%d", id, r.redirect[id])
			delete(r.reqs, id)
		}
		q := &request{id: id, url: e.Request.URL, method: e.Request.Method, rtype: string(e.Type),
			initiator: e.Initiator, priority: string(e.Request.InitialPriority), frame: string(e.FrameID),
			loader: string(e.LoaderID), issued: float64(e.Timestamp), headers: e.Request.Headers}
		if e.WallTime > 0 {
			sec := float64(e.WallTime)
			q.wall = time.Unix(0, int64(sec*1e9))
		}
		r.reqs[id] = q
		r.order = append(r.order, q)
	case *network.EventResourceChangedPriority:
		if q := r.reqs[string(e.RequestID)]; q != nil {
			q.priority = string(e.NewPriority)
		}
	case *network.EventResponseReceived:
		if q := r.reqs[string(e.RequestID)]; q != nil {
			q.resp = e.Response
			if e.Type != "" {
				q.rtype = string(e.Type)
			}
		}
	case *network.EventDataReceived:
		if q := r.reqs[string(e.RequestID)]; q != nil {
			if q.firstData == 0 {
				q.firstData = float64(e.Timestamp)
			}
			q.bodyBytes += e.DataLength
		}
	case *network.EventLoadingFinished:
		if q := r.reqs[string(e.RequestID)]; q != nil && !q.done {
			q.end, q.transfer, q.done = float64(e.Timestamp), e.EncodedDataLength, true
		}
	case *network.EventLoadingFailed:
		if q := r.reqs[string(e.RequestID)]; q != nil && !q.done {
			q.end, q.done = float64(e.Timestamp), true
			q.failure = e.ErrorText
			if e.BlockedReason != "" {
				q.failure += " (blocked: " + string(e.BlockedReason) + ")"
				q.blocked = true
			}
			if e.Canceled {
				q.failure += " (canceled)"
			}
		}
	case *page.EventLoadEventFired:
		r.loadAt = float64(e.Timestamp)
	case *page.EventDomContentEventFired:
		r.dclAt = float64(e.Timestamp)
	case *page.EventLifecycleEvent:
		r.life = append(r.life, lifecycle{frame: string(e.FrameID), loader: string(e.LoaderID), name: e.Name, at: float64(e.Timestamp)})
	case *tracing.EventDataCollected:
		for _, v := range e.Value {
			var te TraceEvent
			if err := json.Unmarshal(v, &te); err != nil {
				r.traceDecodeE = err
				continue
			}
			if r.trace {
				r.traceEvents = append(r.traceEvents, te)
			}
			if visualEvent(te.Name) {
				r.visualEvents = append(r.visualEvents, te)
			}
		}
	case *performancetimeline.EventTimelineEventAdded:
		if ev := e.Event; ev != nil && ev.LcpDetails != nil && (r.frame == "" || string(ev.FrameID) == r.frame) {
			d := ev.LcpDetails
			r.lcpEntries = append(r.lcpEntries, lcpEntry{node: int64(d.NodeID), url: d.URL, size: d.Size})
		}
	case *tracing.EventTracingComplete:
		r.traceDone = true
	}
}

// mainEvent is the time of the main frame's lifecycle event name for the navigation (0 = not yet).
func (r *recorder) mainEvent(name string) float64 {
	for _, l := range r.life {
		if l.name == name && l.frame == r.frame && (r.loader == "" || l.loader == r.loader) {
			return l.at
		}
	}
	return 0
}

func (r *recorder) inflight() int {
	n := 0
	for _, q := range r.reqs {
		if !q.done {
			n++
		}
	}
	return n
}

// errBrowserGone: the load ended because Chromium's tab did (the browser exited or crashed, or its
// DevTools connection closed) — not a timeout.
var errBrowserGone = errors.New("chromium ended before the page had loaded")

// wait returns when the page has loaded: the main frame's load event has fired, no request is in
// flight, and the first contentful paint has been reported (or PaintGrace has passed since the
// page was otherwise complete). loadCtx bounds the load (timeout); parent is the caller's context.
func (r *recorder) wait(loadCtx, parent context.Context) error {
	var grace <-chan time.Time
	for {
		r.mu.Lock()
		loaded := r.frame != "" && r.mainEvent("load") > 0 && r.inflight() == 0
		painted := r.mainEvent("firstContentfulPaint") > 0
		r.mu.Unlock()
		if loaded && painted {
			return nil
		}
		if loaded && grace == nil {
			grace = time.After(PaintGrace)
		}
		select {
		case <-r.notify:
		case <-grace:
			r.mu.Lock()
			idle := r.inflight() == 0
			r.mu.Unlock()
			if idle {
				return nil
			}
			grace = nil
		case <-loadCtx.Done():
			if parent.Err() != nil {
				return fmt.Errorf("load cancelled: %w", context.Cause(parent))
			}
			if !errors.Is(loadCtx.Err(), context.DeadlineExceeded) {
				// the tab's context ended, not the load's time: Chromium or its DevTools connection went away
				return fmt.Errorf("%w (%v)", errBrowserGone, context.Cause(loadCtx))
			}
			return errors.New("timeout: the page did not finish loading in time (client.timeout_s)")
		}
	}
}

func (r *recorder) waitTrace(ctx context.Context) error {
	for {
		r.mu.Lock()
		done, err := r.traceDone, r.traceDecodeE
		r.mu.Unlock()
		if done {
			return err
		}
		select {
		case <-r.notify:
		case <-ctx.Done():
			return errors.New("the trace did not complete")
		}
	}
}

// fill converts the recorded events into res's entries and load-level values; checkHost judges
// every request's host (a request outside what the load may reach is the load's error).
func (r *recorder) fill(res *Result, checkHost func(host string) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reqs := make([]*request, 0, len(r.order))
	for _, q := range r.order {
		if len(q.url) >= 5 && (q.url[:5] == "data:" || q.url[:5] == "blob:") {
			continue // not on the wire
		}
		if q.blocked && isRootFavicon(q.url) {
			continue // the favicon Chromium asks for by itself: blocked, never sent (see Load)
		}
		reqs = append(reqs, q)
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].issued < reqs[j].issued })
	var t0 float64
	for _, q := range reqs {
		if q.loader == r.loader && q.rtype == string(network.ResourceTypeDocument) && q.frame == r.frame {
			// The navigation's request is issued by the browser process, which first sets up the
			// navigation (and may start the renderer); the load starts when the network stack
			// starts the request (timing.requestTime), as the engine loader's first request does.
			t0 = q.issued
			if q.resp != nil && q.resp.Timing != nil && q.resp.Timing.RequestTime > t0 {
				res.NavigationDelayMS = (q.resp.Timing.RequestTime - t0) * 1000
				t0 = q.resp.Timing.RequestTime
				if !q.wall.IsZero() {
					q.wall = q.wall.Add(time.Duration(res.NavigationDelayMS * float64(time.Millisecond)))
				}
				q.issued = t0
			}
			break
		}
	}
	if t0 == 0 && len(reqs) > 0 {
		t0 = reqs[0].issued
	}
	res.t0 = t0
	rel := func(ts float64) float64 {
		if ts <= 0 {
			return -1
		}
		return (ts - t0) * 1000
	}
	conns := map[string]bool{}
	tlsConns := map[string]bool{}
	last := t0
	for _, q := range reqs {
		e := q.entry(t0)
		if q.done {
			last = max(last, q.end)
		}
		if e.Error == "" && !q.done {
			e.Error = "did not complete"
		}
		if e.Error == "" {
			if err := checkEntryURL(q.url, checkHost); err != nil {
				e.Error = err.Error()
			}
		}
		if e.Error != "" && res.Err == nil {
			res.Err = fmt.Errorf("%s: %s", q.url, e.Error)
		}
		if e.Error == "" && e.Status < 400 {
			res.Objects++
		}
		res.BodyBytes += e.BodyBytes
		res.Phases.Add(e.Timings)
		if e.Connection != "" && e.Connection != "0" && !conns[e.Connection] {
			conns[e.Connection] = true
			res.Connections++
		}
		if e.Connection != "" && e.Connection != "0" && strings.HasPrefix(e.URL, "https:") && !tlsConns[e.Connection] {
			// CDP does not say whether a handshake resumed a session: Load replaces this count
			// with the NetLog's full and resumed handshakes (netlog.go).
			tlsConns[e.Connection] = true
			res.TLSHandshakes++
		}
		if e.Timings.DNS >= 0 {
			res.DNSQueries++
		}
		res.Entries = append(res.Entries, e)
	}
	if len(reqs) > 0 {
		res.PLT = time.Duration((last - t0) * float64(time.Second))
		for _, q := range reqs {
			if !q.wall.IsZero() {
				res.StartedAt = q.wall.Add(time.Duration((t0 - q.issued) * float64(time.Second)))
				break
			}
		}
	}
	res.OnLoadMS = rel(r.mainEvent("load"))
	res.DOMContentLoadedMS = rel(r.mainEvent("DOMContentLoaded"))
	res.FirstPaintMS = rel(r.mainEvent("firstPaint"))
	res.FirstContentfulPaintMS = rel(r.mainEvent("firstContentfulPaint"))
}

// visual computes the load's visual metrics from what the recorder kept (t0: the load's zero on
// CDP's clock, in seconds); without a trace there are none.
// visualTrace is a copy of the visual trace events.
func (r *recorder) visualTrace() []TraceEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]TraceEvent(nil), r.visualEvents...)
}

func (r *recorder) visual(t0 float64, screenshots bool) (Visual, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.traced || t0 == 0 {
		return Visual{}, nil
	}
	return computeVisual(visualInput{events: r.visualEvents, timeline: r.lcpEntries, frame: r.frame,
		loader: r.loader, t0: t0, screenshots: screenshots})
}

// isRootFavicon reports whether u is /favicon.ico at an origin's root, which Chromium requests by
// itself after a page has loaded. Lab pages live below /L/<token>/, so no page object has that path.
func isRootFavicon(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && pu.Path == "/favicon.ico"
}
