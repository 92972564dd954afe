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

// await waits up to limit until every one of remotes has a report in the map of reports that
// reports returns (read under q.mu), then takes them out; it returns the reports there are, in the
// order of remotes, and how many are missing. It gives up early when ctx ends or gone is closed
// (the server exited).
func await[T any](q *quicReports, ctx context.Context, remotes []string, limit time.Duration, gone <-chan struct{}, reports func() map[string]T) ([]T, int) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		q.mu.Lock()
		var got []T
		m := reports()
		for _, r := range remotes {
			if ev, ok := m[r]; ok {
				got = append(got, ev)
			}
		}
		missing := len(remotes) - len(got)
		changed := q.changed
		if missing == 0 {
			for _, r := range remotes {
				delete(m, r)
			}
		}
		q.mu.Unlock()
		if missing == 0 {
			return got, 0
		}
		select {
		case <-changed:
		case <-timer.C:
			return got, missing
		case <-ctx.Done():
			return got, missing
		case <-gone:
			return got, missing
		}
	}
}

// takeMaps waits for the end of the h2 connections from remotes and returns their stream maps,
// and how many did not report (await).
func (q *quicReports) takeMaps(ctx context.Context, remotes []string, limit time.Duration, gone <-chan struct{}) ([]why.StreamMap, int) {
	got, missing := await(q, ctx, remotes, limit, gone, func() map[string]server.H2Closed { return q.h2 })
	maps := make([]why.StreamMap, 0, len(got))
	for _, ev := range got {
		m := why.StreamMap{Remote: ev.Remote}
		for _, run := range ev.StreamMap {
			m.Runs = append(m.Runs, why.StreamRun{Stream: run[0], Start: run[1], End: run[2]})
		}
		maps = append(maps, m)
	}
	return maps, missing
}

// take waits for the end of the h3 connections from remotes (client address:port) and returns
// the packets the server declared lost on them, its loss recovery by kind, and how many did not
// report (await).
func (q *quicReports) take(ctx context.Context, remotes []string, limit time.Duration, gone <-chan struct{}) (lost int64, kinds why.Retx, missing int) {
	got, missing := await(q, ctx, remotes, limit, gone, func() map[string]quicClosed { return q.quic })
	for _, ev := range got {
		lost += int64(ev.PacketsLost)
		kinds.Add(ev.Loss)
	}
	return lost, kinds, missing
}
