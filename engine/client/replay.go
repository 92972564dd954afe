package client

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/wirelab/wirelab/engine/page"
)

// replayPlanner replays a page's dependency graph (study W's Epload): a download activity is a
// real request for its object; a computation (parse, evaluate) is a wait of its recorded duration
// × ComputeScale. An activity starts when every dependency is satisfied: "complete" when the
// activity waited for has finished (a download: its response has arrived whole, or failed),
// "first_chunk" when the first body bytes of the download waited for have arrived (or it finished
// without any). Computations run one at a time, as on a browser's main thread, in the order they
// became ready. The load ends when every activity has finished.
type replayPlanner struct {
	acts  []page.Activity
	urls  []*url.URL // per activity: the object's URL (downloads)
	scale float64
	now   func() time.Duration

	waiting    []int   // per activity: unsatisfied dependencies
	onComplete [][]int // per activity: dependents waiting for its completion
	onChunk    [][]int // per activity: dependents waiting for its first chunk
	done       []bool
	chunked    []bool
	byURL      map[string]int // download URL → activity
	initiator  []string       // per activity: URL of the object of the dependency that released it last

	ready    []int // computations whose dependencies are met, waiting for the main thread (FIFO)
	busy     bool  // a computation is running
	running  int   // the running computation
	deadline time.Duration
	finished int
	lastEnd  time.Duration
}

// newReplayPlanner builds the planner for pg loaded from root (…/L/<token>/), scale ≥ 0.
func newReplayPlanner(pg *page.Page, root *url.URL, scale float64, now func() time.Duration) (*replayPlanner, error) {
	if pg == nil {
		return nil, errors.New("page: mode replay needs the page model (its dependency graph)")
	}
	token, objPath, ok := page.SplitPath(root.Path)
	if !ok || objPath != "/" {
		return nil, fmt.Errorf("url %q: mode replay needs the page's root URL <scheme>://s1.wirelab.test[:port]/L/<token>/", root)
	}
	port := 0
	if p := root.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	base := page.Base{Scheme: root.Scheme, Port: port, Token: token}
	acts := pg.Activities
	if len(acts) == 0 {
		acts = page.BuildGraph(pg)
	}
	objIndex := map[string]int{}
	for i, o := range pg.Objects {
		objIndex[o.ID] = i
	}
	actIndex := map[string]int{}
	for i, a := range acts {
		actIndex[a.ID] = i
	}
	p := &replayPlanner{acts: acts, scale: scale, now: now, urls: make([]*url.URL, len(acts)),
		waiting: make([]int, len(acts)), onComplete: make([][]int, len(acts)), onChunk: make([][]int, len(acts)),
		done: make([]bool, len(acts)), chunked: make([]bool, len(acts)), byURL: map[string]int{},
		initiator: make([]string, len(acts)), running: -1}
	for i, a := range acts {
		oi, ok := objIndex[a.Object]
		if !ok {
			return nil, fmt.Errorf("page: activities[%d].object %q is not an object of the page", i, a.Object)
		}
		if a.Kind == page.KindDownload {
			raw, err := pg.URL(oi, base)
			if err != nil {
				return nil, err
			}
			u, err := url.Parse(raw)
			if err != nil {
				return nil, err
			}
			p.urls[i] = u
			p.byURL[u.String()] = i
		}
		for _, d := range a.Deps {
			k, ok := actIndex[d.On]
			if !ok {
				return nil, fmt.Errorf("page: activities[%d].deps: %q is not an activity", i, d.On)
			}
			p.waiting[i]++
			if d.Point() == page.WhenFirstChunk {
				p.onChunk[k] = append(p.onChunk[k], i)
			} else {
				p.onComplete[k] = append(p.onComplete[k], i)
			}
		}
	}
	return p, nil
}

func (p *replayPlanner) start() []plannedRequest {
	var out []plannedRequest
	for i := range p.acts {
		if p.waiting[i] == 0 {
			out = p.begin(i, out)
		}
	}
	return p.runReady(out)
}

// begin starts activity i: a download is requested; a computation joins the main thread's queue.
func (p *replayPlanner) begin(i int, out []plannedRequest) []plannedRequest {
	if p.acts[i].Kind == page.KindDownload {
		return append(out, plannedRequest{url: p.urls[i], initiator: p.initiator[i]})
	}
	p.ready = append(p.ready, i)
	return out
}

// runReady starts the next computation if the main thread is free; computations of zero duration
// complete at once (and may release more work).
func (p *replayPlanner) runReady(out []plannedRequest) []plannedRequest {
	for !p.busy && len(p.ready) > 0 {
		i := p.ready[0]
		p.ready = p.ready[1:]
		d := time.Duration(p.acts[i].DurationMs * p.scale * float64(time.Millisecond))
		if d <= 0 {
			out = p.complete(i, out)
			continue
		}
		p.busy, p.running, p.deadline = true, i, p.now()+d
	}
	return out
}

// complete marks activity i finished and starts what it released.
func (p *replayPlanner) complete(i int, out []plannedRequest) []plannedRequest {
	if p.done[i] {
		return out
	}
	p.done[i] = true
	p.finished++
	p.lastEnd = max(p.lastEnd, p.now())
	out = p.chunk(i, out) // a finished download has had its first chunk
	for _, k := range p.onComplete[i] {
		out = p.release(k, i, out)
	}
	return out
}

func (p *replayPlanner) chunk(i int, out []plannedRequest) []plannedRequest {
	if p.chunked[i] {
		return out
	}
	p.chunked[i] = true
	for _, k := range p.onChunk[i] {
		out = p.release(k, i, out)
	}
	return out
}

// release satisfies one dependency of k (on activity by) and starts k when it was the last.
func (p *replayPlanner) release(k, by int, out []plannedRequest) []plannedRequest {
	p.waiting[k]--
	if p.urls[by] != nil {
		p.initiator[k] = p.urls[by].String()
	} else if p.initiator[by] != "" {
		p.initiator[k] = p.initiator[by]
	}
	if p.waiting[k] == 0 {
		out = p.begin(k, out)
	}
	return out
}

func (p *replayPlanner) completed(r *request) []plannedRequest {
	i, ok := p.byURL[r.url.String()]
	if !ok {
		return nil
	}
	return p.runReady(p.complete(i, nil))
}

func (p *replayPlanner) firstChunk(r *request) []plannedRequest {
	i, ok := p.byURL[r.url.String()]
	if !ok {
		return nil
	}
	return p.runReady(p.chunk(i, nil))
}

func (p *replayPlanner) nextDeadline() (time.Duration, bool) { return p.deadline, p.busy }

func (p *replayPlanner) timer(now time.Duration) []plannedRequest {
	if !p.busy || now < p.deadline {
		return nil
	}
	p.busy = false
	i := p.running
	p.running = -1
	return p.runReady(p.complete(i, nil))
}

func (p *replayPlanner) wantsChunks() bool { return true }

// end is when the last activity finished (the replay's PLT end), and whether all did.
func (p *replayPlanner) end() (time.Duration, bool) { return p.lastEnd, p.finished == len(p.acts) }
