package client

import (
	"context"
	"net/url"
	"sync"
	"time"
)

// Server push, as the loader handles it (h2, h2c, spdy3 with Config.AcceptPush): a connection
// that receives a push registers it here with the pushed URL; a request the planner issues for a
// URL that was pushed is not sent but adopts the pushed response, waiting for it if it is still
// arriving. A push for a URL the loader has already requested is refused at once (RST_STREAM
// CANCEL): the request is on its way and the push would only duplicate it.

// pushed is one pushed response: r is the exchange the loader did not send, filled by the
// connection that received it (its issued time is the promise's arrival).
type pushed struct {
	r       *request
	done    chan struct{} // closed when r has finished (r.end, r.err set)
	err     error         // why it failed, as the connection said (r.err carries the URL too)
	claimed bool          // a request adopted it
}

// pushCache is a load's pushed responses and the URLs it requested.
type pushCache struct {
	mu        sync.Mutex
	byURL     map[string]*pushed
	all       []*pushed
	refused   int             // pushes refused because the URL was already requested
	requested map[string]bool // URLs the loader sent (or is sending) a request for
}

func newPushCache() *pushCache {
	return &pushCache{byURL: map[string]*pushed{}, requested: map[string]bool{}}
}

// promise registers a push of u received at now on connection conn, stream id. It returns nil when
// the push must be refused: the URL was already requested or pushed.
func (c *pushCache) promise(u *url.URL, o origin, conn int, id int64, now time.Duration) *pushed {
	key := u.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.requested[key] || c.byURL[key] != nil {
		c.refused++
		return nil
	}
	r := &request{url: u, origin: o, document: true, parse: true} // keep HTML/CSS bodies for whoever adopts it
	r.reset()
	r.issued, r.sendStart, r.sendEnd = now, now, now
	r.conn, r.streamID = conn, id
	p := &pushed{r: r, done: make(chan struct{})}
	c.byURL[key] = p
	c.all = append(c.all, p)
	return p
}

// reset empties the cache for a Tab's next load: what was pushed or requested in an earlier load
// is forgotten (a push still arriving fills its own entry, which nobody adopts).
func (c *pushCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byURL, c.all, c.refused, c.requested = map[string]*pushed{}, nil, 0, map[string]bool{}
}

// finish ends a push's exchange at now (err: it failed or was reset).
func (p *pushed) finish(now time.Duration, err error) {
	p.err = err
	p.r.finish(now, err)
	close(p.done)
}

// claim returns the push of key for a request to adopt, or nil: the request is then sent, and
// later pushes of key are refused.
func (c *pushCache) claim(key string) *pushed {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.byURL[key]; p != nil && !p.claimed {
		p.claimed = true
		return p
	}
	c.requested[key] = true
	return nil
}

// adopt completes r with the pushed response p: no request is sent. The phases: blocked, dns,
// connect and ssl do not apply, send is 0, wait runs until the push's headers arrived and receive
// until its last byte (both 0 when the push had completed before r was issued). A push that failed
// (reset, connection lost) is given back — it counts as unused — and adopt returns false with r
// untouched: the caller sends the request as if nothing had been pushed.
func (p *pushed) adopt(ctx context.Context, r *request, s *session) bool {
	select {
	case <-p.done:
	case <-ctx.Done():
		r.finish(s.now(), ctx.Err())
		return true
	}
	if p.err != nil {
		s.pushes.giveBack(p)
		return false
	}
	pr := p.r
	r.pushed = true
	r.sendStart, r.sendEnd = r.issued, r.issued
	r.conn, r.streamID = pr.conn, pr.streamID
	r.gotHeaders(pr.status, pr.contentType, pr.contentLength)
	r.bodyBytes = pr.bodyBytes
	if r.keep {
		r.body = pr.body
	}
	if pr.firstByte != unset {
		r.firstByte = max(r.issued, pr.firstByte)
	}
	r.finish(max(r.issued, pr.end), nil)
	return true
}

// giveBack marks a claimed push that failed as not used.
func (c *pushCache) giveBack(p *pushed) {
	c.mu.Lock()
	p.claimed = false
	c.mu.Unlock()
}

// PushStats are a load's pushes.
type PushStats struct {
	Bytes  int64 // body bytes received on pushed streams the loader kept
	Used   int   // pushes a request adopted
	Unused int   // pushes no request adopted, including those refused (already requested)
}

func (c *pushCache) stats() PushStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := PushStats{Unused: c.refused}
	for _, p := range c.all {
		// Pushes still arriving when the load ended count what had arrived (the connection is
		// closed and its read loop has stopped by now).
		st.Bytes += p.r.bodyBytes
		if p.claimed {
			st.Used++
		} else {
			st.Unused++
		}
	}
	return st
}
