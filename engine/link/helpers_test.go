package link

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

const forever = time.Duration(math.MaxInt64)

func packet(size int) *Packet { return &Packet{Data: make([]byte, size)} }

func newDirection(t testing.TB, cfg Config) *Direction {
	t.Helper()
	d, err := NewDirection(cfg)
	if err != nil {
		t.Fatalf("NewDirection(%+v): %v", cfg, err)
	}
	return d
}

// popAll pops every packet the direction holds, in due order.
func popAll(d *Direction) []*Packet {
	var out []*Packet
	for {
		p, ok := d.Pop(forever)
		if !ok {
			return out
		}
		out = append(out, p)
	}
}

func mustTrace(t testing.TB, text string) *profile.Trace {
	t.Helper()
	tr, err := profile.ParseTrace("trace_down", "test", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// z999 is the two-sided 99.9 % standard normal quantile.
const z999 = 3.2905267314919255

func typeName(v any) string { return fmt.Sprintf("%T", v) }
