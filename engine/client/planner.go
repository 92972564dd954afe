package client

import (
	"net/url"

	"github.com/wirelab/wirelab/engine/page"
)

// A planner decides which requests a load issues and when; it is the extension point of the
// load modes. The load loop calls it from one goroutine: start once, then completed for every
// request as it completes (successfully or not). The loop removes duplicate URLs, so a planner may
// return a URL again.
//
// Dependency-graph replay (trial mode "replay", a later issue) will be a third planner: it starts
// the graph's root activities and, as downloads complete (and, for partial dependencies, as their
// first bytes arrive), starts the activities that depend on them after waiting their recorded
// computation time. That needs two things this interface does not have yet and that no current
// mode uses: a first-byte event and timers (a planner method returning its next deadline).
type planner interface {
	start() []plannedRequest
	completed(r *request) []plannedRequest
}

// plannedRequest is a URL to request and how it was found.
type plannedRequest struct {
	url       *url.URL
	initiator string    // URL of the referencing document or stylesheet; "" for the root or a listed object
	document  bool      // a document: parsed for sub-resources if it is HTML (flat mode)
	parse     bool      // keep HTML/CSS bodies for discovery
	kind      page.Type // what the reference loads, as far as the referrer says ("" unknown); for priorities
}

// flatPlanner: the root document first; once it has arrived whole, every sub-resource it
// references, all at once; then, as each stylesheet or frame document arrives, the references it
// adds. A browser without scripts and computation does the same.
type flatPlanner struct{ root *url.URL }

func (p flatPlanner) start() []plannedRequest {
	return []plannedRequest{{url: p.root, document: true, parse: true, kind: page.TypeHTML}}
}

func (p flatPlanner) completed(r *request) []plannedRequest {
	if r.err != nil || !r.keep {
		return nil
	}
	var refs []ref
	switch mediaType(r.contentType) {
	case "text/html":
		refs = discoverHTML(r.body, r.url)
	case "text/css":
		refs = discoverCSS(r.body, r.url)
	}
	out := make([]plannedRequest, len(refs))
	for i, rf := range refs {
		out[i] = plannedRequest{url: rf.url, initiator: r.url.String(), document: rf.frame, parse: true, kind: rf.kind}
	}
	return out
}

// objectsPlanner: every listed object at once, nothing parsed (study W's object-level client).
type objectsPlanner struct{ objects []*url.URL }

func (p objectsPlanner) start() []plannedRequest {
	out := make([]plannedRequest, len(p.objects))
	for i, u := range p.objects {
		out[i] = plannedRequest{url: u}
	}
	return out
}

func (objectsPlanner) completed(*request) []plannedRequest { return nil }
