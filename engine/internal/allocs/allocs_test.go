package allocs

import "testing"

var sink []byte

// An allocation every other call: AllocsPerRun's integer division hides it, Count does not.
func TestCountSeesWhatAllocsPerRunRoundsAway(t *testing.T) {
	k := 0
	everyOther := func() {
		if k++; k%2 == 0 {
			sink = make([]byte, 64)
		}
	}
	if got := testing.AllocsPerRun(1000, everyOther); got != 0 {
		t.Fatalf("AllocsPerRun = %v: the premise (it rounds down) no longer holds", got)
	}
	if got := Count(1000, everyOther); got < 500 || got > 501 {
		t.Errorf("Count = %d, want 500 (one allocation every other call of 1,000)", got)
	}
	if got := Count(1000, func() {}); got != 0 {
		t.Errorf("Count of a call that allocates nothing = %d", got)
	}
}
