package probe

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

// Rate is the most connections a probe opens to one host per unit of time.
type Rate struct {
	N    int
	Per  time.Duration
	Text string // as given
}

// Limits of Rate.
const (
	// DefaultRate is 2 connections per second per host.
	DefaultRate = "2/s"
	// MaxRatePerSecond bounds how hard a probe may hit one host.
	MaxRatePerSecond = 100
)

// Interval is the least time between two connections to one host.
func (r Rate) Interval() time.Duration { return r.Per / time.Duration(r.N) }

// ParseRate parses N/s, N/min or N/h (N ≥ 1, at most MaxRatePerSecond per second).
func ParseRate(s string) (Rate, error) {
	num, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.Atoi(num)
	per := map[string]time.Duration{"s": time.Second, "min": time.Minute, "h": time.Hour}[unit]
	if !ok || err != nil || n < 1 || per == 0 {
		return Rate{}, fielderr.New("rate", s, "must be N/s, N/min or N/h with N ≥ 1 (connections per host), e.g. %s", DefaultRate)
	}
	r := Rate{N: n, Per: per, Text: s}
	if r.Interval() < time.Second/MaxRatePerSecond {
		return Rate{}, fielderr.New("rate", s, "must be at most %d/s per host", MaxRatePerSecond)
	}
	return r, nil
}

func (r Rate) String() string {
	if r.Text != "" {
		return r.Text
	}
	return fmt.Sprintf("%d/%s", r.N, r.Per)
}

// pacer spaces connections to each host by an interval. It is sans-IO: reserve takes the time and
// says when the caller may go.
type pacer struct {
	interval time.Duration
	mu       sync.Mutex
	next     map[string]time.Time // host → earliest time of its next connection
}

func newPacer(interval time.Duration) *pacer {
	return &pacer{interval: interval, next: map[string]time.Time{}}
}

// reserve books the host's next slot at or after now and returns it.
func (p *pacer) reserve(host string, now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := now
	if n, ok := p.next[host]; ok && n.After(now) {
		at = n
	}
	p.next[host] = at.Add(p.interval)
	return at
}

// wait blocks until the host's next slot (or ctx ends).
func (p *pacer) wait(ctx context.Context, host string) error {
	d := time.Until(p.reserve(host, time.Now()))
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
