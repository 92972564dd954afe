package client

import (
	"net/url"
	"time"

	"github.com/wirelab/wirelab/engine/page"
)

// A planner decides which requests a load issues and when; it is the extension point of the
// load modes. The load loop calls it from one goroutine: start once, then completed for every
// request as it completes (successfully or not), firstChunk when a request's first body bytes
// arrive (only if wantsChunks), and timer when the deadline nextDeadline reported has passed. The
// loop runs until no request is in flight and the planner has no deadline. The loop removes
// duplicate URLs, so a planner may return a URL again.
type planner interface {
	start() []plannedRequest
	completed(r *request) []plannedRequest
	// wantsChunks asks for firstChunk events (they cost the pools a hand-off per request).
	wantsChunks() bool
	firstChunk(r *request) []plannedRequest
	// nextDeadline is the load-clock time of the planner's next timer, if it has one.
	nextDeadline() (time.Duration, bool)
	timer(now time.Duration) []plannedRequest
}

// Compile-time checks: every mode implements the whole interface.
var (
	_ planner = flatPlanner{}
	_ planner = objectsPlanner{}
	_ planner = (*replayPlanner)(nil)
)

// untimed is the part of the interface the network-driven modes do not use.
type untimed struct{}

func (untimed) wantsChunks() bool                    { return false }
func (untimed) firstChunk(*request) []plannedRequest { return nil }
func (untimed) nextDeadline() (time.Duration, bool)  { return 0, false }
func (untimed) timer(time.Duration) []plannedRequest { return nil }

// plannedRequest is a URL to request and how it was found.
type plannedRequest struct {
	url       *url.URL
	key       string    // url.String() if the planner has it ("": the load loop makes it)
	initiator string    // URL of the referencing document or stylesheet; "" for the root or a listed object
	document  bool      // a document: parsed for sub-resources if it is HTML (flat mode)
	parse     bool      // keep HTML/CSS bodies for discovery
	kind      page.Type // what the reference loads, as far as the referrer says ("" unknown); for priorities
}

// flatPlanner: the root document first; once it has arrived whole, every sub-resource it
// references, all at once; then, as each stylesheet or frame document arrives, the references it
// adds. A browser without scripts and computation does the same.
type flatPlanner struct {
	untimed
	root  *url.URL
	cache *discoveryCache // a Tab's loader: documents seen before are not parsed again (nil: always parsed)
}

func (p flatPlanner) start() []plannedRequest {
	return []plannedRequest{{url: p.root, document: true, parse: true, kind: page.TypeHTML}}
}

func (p flatPlanner) completed(r *request) []plannedRequest {
	if r.err != nil || !r.keep {
		return nil
	}
	refs := p.cache.discover(r)
	out := make([]plannedRequest, len(refs))
	initiator := r.url.String()
	for i, rf := range refs {
		out[i] = plannedRequest{url: rf.url, key: rf.key, initiator: initiator, document: rf.frame, parse: true, kind: rf.kind}
	}
	return out
}

// objectsPlanner: every listed object at once, nothing parsed (study W's object-level client).
type objectsPlanner struct {
	untimed
	objects []*url.URL
}

func (p objectsPlanner) start() []plannedRequest {
	out := make([]plannedRequest, len(p.objects))
	for i, u := range p.objects {
		out[i] = plannedRequest{url: u}
	}
	return out
}

func (objectsPlanner) completed(*request) []plannedRequest { return nil }
