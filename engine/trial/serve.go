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

// quicReports collects the built-in server's reports of ended h3 connections (serve
// --quic-stats), by the client's address:port, until a load takes them.
type quicReports struct {
	mu      sync.Mutex
	quic    map[string]quicClosed
	changed chan struct{} // closed (and replaced) when quic gains an entry
}

func newQUICReports() *quicReports {
	return &quicReports{quic: map[string]quicClosed{}, changed: make(chan struct{})}
}

// line is the lab's OnServerLine: quic_closed lines are kept, the rest logged.
func (q *quicReports) line(log *EngineLog) func(string) {
	return func(l string) {
		var ev quicClosed
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Event == "quic_closed" {
			q.add(ev)
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
}

func (q *quicReports) add(ev quicClosed) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.quic[ev.Remote] = ev
	close(q.changed)
	q.changed = make(chan struct{})
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
