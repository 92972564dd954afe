package link_test

import (
	"fmt"
	"time"

	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/link/profile"
)

// A 1 Mbit/s, 150 ms RTT path: a burst of three full-size packets leaves the bottleneck 12 ms
// apart and arrives 75 ms later. Time is whatever the caller says it is.
func Example() {
	r := profile.MustParse("elkhatib-default")
	up, down, err := link.FromProfile(r, 1)
	if err != nil {
		panic(err)
	}
	_ = up
	for i := 0; i < 3; i++ {
		down.Push(0, &link.Packet{Data: make([]byte, 1500)})
	}
	for {
		next, ok := down.NextDeadline()
		if !ok {
			break
		}
		p, _ := down.Pop(next) // a real-time runner sleeps until next, then pops
		fmt.Println(len(p.Data), "bytes at", p.Due())
	}
	fmt.Printf("%+v\n", down.Stats())
	// Output:
	// 1500 bytes at 87ms
	// 1500 bytes at 99ms
	// 1500 bytes at 111ms
	// {Packets:3 Bytes:4500 DeliveredPackets:3 DeliveredBytes:4500 DropsLoss:0 DropsLossBytes:0 DropsQueue:0 DropsQueueBytes:0 MaxQueuePackets:3 MaxQueueBytes:4500 InFlight:0}
}

// Pushing at a time unrelated to the wall clock: ten seconds of virtual time take no time at all.
func ExampleDirection_Push() {
	d, err := link.NewDirection(link.Config{RateBPS: 64_000, Delay: 250 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		fate := d.Push(10*time.Second, &link.Packet{Data: make([]byte, 1500)})
		fmt.Println(fate)
	}
	p, _ := d.Pop(time.Hour)
	fmt.Println(p.Due())
	// Output:
	// accepted
	// accepted
	// accepted
	// 10.4375s
}
