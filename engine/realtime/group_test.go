package realtime

import (
	"testing"
	"time"
)

const us = time.Microsecond

// The writer holds a batch for the next packet only when that one is due within groupWindow of
// the batch's first deadline, and only while there is a batch with room.
func TestHoldGroupsCloseDeadlines(t *testing.T) {
	o := newOutbox()
	o.batch = append(o.batch, entry{deadline: 100 * us}, entry{deadline: 104 * us})
	now := 105 * us
	for _, c := range []struct {
		next time.Duration
		has  bool
		want bool
	}{
		{112 * us, true, true},
		{100*us + groupWindow, true, true}, // the first then leaves exactly groupWindow late
		{100*us + groupWindow + 1, true, false},
		{105 * us, true, false}, // due now: collect takes it, no wait
		{112 * us, false, false},
	} {
		if got := hold(o, now, c.next, c.has); got != c.want {
			t.Errorf("hold(next %v, has %v) = %v, want %v", c.next, c.has, got, c.want)
		}
	}
	if hold(newOutbox(), now, 110*us, true) {
		t.Error("held an empty batch: a lone packet must never wait for a later one")
	}
	full := newOutbox()
	for range batchSize {
		full.batch = append(full.batch, entry{deadline: 100 * us})
	}
	if hold(full, now, 110*us, true) {
		t.Error("held a full batch")
	}
}
