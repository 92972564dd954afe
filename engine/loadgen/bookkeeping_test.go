package loadgen

import (
	"testing"
	"time"
)

// The accounting costs something, and far less than a page load (a page of 51 objects costs the
// loader tens of milliseconds of CPU; docs/client.md).
func TestMeasureBookkeeping(t *testing.T) {
	c := MeasureBookkeeping(51, 100)
	if c.PerPage <= 0 || c.PerPage > time.Millisecond || c.PerInterval <= 0 || c.PerInterval > 100*time.Millisecond {
		t.Errorf("bookkeeping %+v", c)
	}
}

// go test -run '^$' -bench Bookkeeping ./loadgen/ — the figures `bench loadgen` relates to a run.
func BenchmarkBookkeeping(b *testing.B) {
	var c BookkeepingCost
	for range b.N {
		c = MeasureBookkeeping(51, 100)
	}
	b.ReportMetric(float64(c.PerPage.Nanoseconds())/1e3, "µs/page")
	b.ReportMetric(float64(c.PerInterval.Nanoseconds())/1e3, "µs/interval")
}
