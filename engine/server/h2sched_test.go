package server

import "testing"

// TestH2SchedulerControlFrames pins the x/net internals the scheduler reads: FrameWriteRequest's
// stream pointer, nil exactly for control frames (RST_STREAM included, which must never wait
// behind a stream's data).
func TestH2SchedulerControlFrames(t *testing.T) {
	if streamField < 0 {
		t.Fatal("golang.org/x/net/http2.FrameWriteRequest has no stream pointer field any more: update isControlLocked")
	}
}
