package trial

import (
	"time"

	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/link/profile"
)

// Prepared is a spec checked against everything it refers to — the loader's support, and the
// lab's part (lab.Prepare: page, shards, server, profile, traces, the kernel's congestion
// controls) — with what running it needs. Nothing has been created yet.
type Prepared struct {
	Spec *Spec
	// The lab the trial runs in: the page (nil for a live page), the profile, the emulator's
	// configuration (the caller adds what it captures).
	*lab.Prepared
	Live     *Live  // a live page (url:…); nil otherwise
	Sequence []Load // every load in order
}

// Prepare checks s against everything it refers to. Every error is bad input (a *fielderr.Error)
// naming the field, except a failure to read the machine's settings.
func Prepare(s *Spec) (*Prepared, error) {
	if err := checkSupported(s); err != nil {
		return nil, err
	}
	if IsLive(s.Page) {
		return prepareLive(s)
	}
	lp, err := lab.Prepare(&s.Lab, s.Seed, s.Protocols)
	if err != nil {
		return nil, err
	}
	return completed(s, lp, nil), nil
}

// completed completes a prepared trial: the resolved profile recorded in the spec, the sequence.
func completed(s *Spec, lp *lab.Prepared, live *Live) *Prepared {
	rs := lp.Profile
	s.NetworkRes = &rs
	return &Prepared{Spec: s, Prepared: lp, Live: live, Sequence: Sequence(s)}
}

// maxDelay is the longest one-way path of the profile: the base delay, the jitter and the
// largest per-origin extra (half of its RTT each way).
func maxDelay(r profile.Resolved) (up, down time.Duration) {
	var extra time.Duration
	for _, x := range r.OriginExtraRTT {
		extra = max(extra, x)
	}
	return r.Up.Delay + r.Up.Jitter + extra/2, r.Down.Delay + r.Down.Jitter + extra - extra/2
}
