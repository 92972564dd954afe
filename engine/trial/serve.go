package trial

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/why"
)

// quicClosed is the built-in server's {"event":"quic_closed",…} line: an h3 connection ended.
type quicClosed struct {
	Event string `json:"event"`
	server.QUICStats
}

// h2Closed is the built-in server's {"event":"h2_closed",…} line: an h2 connection ended, with
// its stream map.
type h2Closed struct {
	Event string `json:"event"`
	server.H2Closed
}

// quicReports collects the built-in server's reports of ended h3 and h2 connections (serve
// --quic-stats), by the client's address:port, until a load takes them.
type quicReports struct {
	mu      sync.Mutex
	quic    map[string]quicClosed
	h2      map[string]server.H2Closed
	changed chan struct{} // closed (and replaced) when a map gains an entry
}

func newQUICReports() *quicReports {
	return &quicReports{quic: map[string]quicClosed{}, h2: map[string]server.H2Closed{}, changed: make(chan struct{})}
}

// line is the lab's OnServerLine: quic_closed and h2_closed lines are kept, the rest logged.
func (q *quicReports) line(log *EngineLog) func(string) {
	return func(l string) {
		var ev quicClosed
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Event == "quic_closed" {
			q.add(func() { q.quic[ev.Remote] = ev })
			return
		}
		var h2 h2Closed
		if json.Unmarshal([]byte(l), &h2) == nil && h2.Event == "h2_closed" {
			q.add(func() { q.h2[h2.Remote] = h2.H2Closed })
			return
		}
		log.Printf("serve: %s", l)
	}
}

// forget drops reports not taken so far (connections of earlier loads).
func (q *quicReports) forget() {
	q.mu.Lock()
	defer q.mu.Unlock()
	clear(q.quic)
	clear(q.h2)
}

func (q *quicReports) add(f func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f()
	close(q.changed)
	q.changed = make(chan struct{})
}

// takeMaps waits up to limit for the end of the h2 connections from remotes and returns their
// stream maps, and how many did not report; it gives up early when gone is closed.
func (q *quicReports) takeMaps(ctx context.Context, remotes []string, limit time.Duration, gone <-chan struct{}) ([]why.StreamMap, int) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		q.mu.Lock()
		var maps []why.StreamMap
		missing := 0
		for _, r := range remotes {
			if ev, ok := q.h2[r]; ok {
				m := why.StreamMap{Remote: r}
				for _, run := range ev.StreamMap {
					m.Runs = append(m.Runs, why.StreamRun{Stream: run[0], Start: run[1], End: run[2]})
				}
				maps = append(maps, m)
			} else {
				missing++
			}
		}
		changed := q.changed
		if missing == 0 {
			for _, r := range remotes {
				delete(q.h2, r)
			}
		}
		q.mu.Unlock()
		if missing == 0 {
			return maps, 0
		}
		select {
		case <-changed:
		case <-timer.C:
			return maps, missing
		case <-ctx.Done():
			return maps, missing
		case <-gone:
			return maps, missing
		}
	}
}

// take waits up to limit for the end of the h3 connections from remotes (client address:port)
// and returns the packets the server declared lost on them, its loss recovery by kind, and how
// many did not report; it gives up early when gone is closed (the server exited).
func (q *quicReports) take(ctx context.Context, remotes []string, limit time.Duration, gone <-chan struct{}) (lost int64, kinds why.Retx, missing int) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		q.mu.Lock()
		missing, lost, kinds = 0, 0, why.Retx{}
		for _, r := range remotes {
			if ev, ok := q.quic[r]; ok {
				lost += int64(ev.PacketsLost)
				kinds.Add(ev.Loss)
			} else {
				missing++
			}
		}
		changed := q.changed
		if missing == 0 {
			for _, r := range remotes {
				delete(q.quic, r)
			}
		}
		q.mu.Unlock()
		if missing == 0 {
			return lost, kinds, 0
		}
		select {
		case <-changed:
		case <-timer.C:
			return lost, kinds, missing
		case <-ctx.Done():
			return lost, kinds, missing
		case <-gone:
			return lost, kinds, missing
		}
	}
}
