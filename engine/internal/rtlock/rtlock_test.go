package rtlock

import (
	"sync"
	"testing"
)

func TestMutualExclusion(t *testing.T) {
	var m Mutex
	var wg sync.WaitGroup
	n := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				m.Lock()
				n++
				m.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != 8*20000 {
		t.Fatalf("n = %d", n)
	}
}

func BenchmarkUncontended(b *testing.B) {
	var m Mutex
	for i := 0; i < b.N; i++ {
		m.Lock()
		m.Unlock()
	}
}
