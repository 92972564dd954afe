package bench

import (
	"net"
	"strings"
	"testing"
	"time"
)

// Spaced connects start on a grid (spacing×i after the first), so the whole run lasts at least
// spacing×(count−1) however fast the path and however many may run at once.
func TestConnectTimesSpacing(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go Serve(ln)
	addr := ln.Addr().String()

	start := time.Now()
	times, kernel, err := ConnectTimes(addr, 5, 5, 40*time.Millisecond, 5*time.Second)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != 5 || len(kernel) != 5 {
		t.Fatalf("got %d times, %d kernel samples; want 5 each", len(times), len(kernel))
	}
	if took < 160*time.Millisecond {
		t.Errorf("5 connects spaced 40 ms apart took %v; want ≥ 160 ms", took)
	}
	for i, d := range times {
		if d <= 0 || d > time.Second {
			t.Errorf("connect %d took %v over loopback", i, d)
		}
	}
}

func TestPeerConnectRejectsBadSpacing(t *testing.T) {
	for _, sp := range []string{"fast", "-1ms"} {
		err := PeerMain([]string{"connect", "127.0.0.1:9", "1", "1", sp})
		if err == nil || !strings.Contains(err.Error(), "spacing") {
			t.Errorf("spacing %q: err = %v; want one naming the spacing", sp, err)
		}
	}
}
