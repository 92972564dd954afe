package spdy

import (
	"reflect"
	"testing"
)

func TestPriorityScheduler(t *testing.T) {
	s := NewPriorityScheduler()
	s.Add(1, 3)
	s.Add(3, 0)
	s.Add(5, 3)
	s.Add(7, 9) // clamps to 7
	s.Add(3, 5) // already present: keeps priority 0
	all := func(uint32) bool { return true }
	var order []uint32
	for i := 0; i < 4; i++ {
		id, _ := s.Next(all)
		order = append(order, id)
	}
	// Priority 0 always wins while it is ready.
	if !reflect.DeepEqual(order, []uint32{3, 3, 3, 3}) {
		t.Fatalf("order %v", order)
	}
	order = nil
	not3 := func(id uint32) bool { return id != 3 }
	for i := 0; i < 4; i++ {
		id, _ := s.Next(not3)
		order = append(order, id)
	}
	// Round robin within priority 3; priority 7 waits.
	if !reflect.DeepEqual(order, []uint32{1, 5, 1, 5}) {
		t.Fatalf("order %v", order)
	}
	s.Remove(1)
	s.Remove(5)
	s.Remove(42)
	if id, ok := s.Next(not3); !ok || id != 7 {
		t.Fatalf("next %d %v", id, ok)
	}
	if _, ok := s.Next(func(uint32) bool { return false }); ok {
		t.Fatal("nothing ready but Next returned a stream")
	}
	if s.Len() != 2 {
		t.Fatalf("len %d", s.Len())
	}
}
