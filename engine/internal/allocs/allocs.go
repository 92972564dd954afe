// Package allocs is how a test holds a path to zero allocations: Count counts every allocation of
// n calls. testing.AllocsPerRun divides the count by the runs with integer division, so a path
// that allocates once every other call reports 0 and passes; Count reports the total (n/2 there,
// as this package's test checks).
package allocs

import "runtime"

// Count calls f once to warm it up, then n times, and returns how many heap allocations the n
// calls made. Like testing.AllocsPerRun it runs with GOMAXPROCS 1, so that other goroutines of the
// test binary hardly run meanwhile; what they allocate would be counted too.
func Count(n int, f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}
