package link

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// checkProperties holds what every discipline must do on any arrivals: every packet offered is
// delivered or dropped exactly once and the counters say so; none is delivered before its
// serialisation (its arrival plus its transmission time at the rate, plus the delay less jitter);
// the packets of one flow leave in the order they came; and popping late (a busy runner) changes
// nothing — not one fate, not one due time.
func checkProperties(t *testing.T, cfg Config, arrivals []arrival) {
	t.Helper()
	out, d := runLink(t, cfg, arrivals, 0)
	s, g := d.Stats(), d.Gateway()
	delivered, dropped := 0, 0
	for _, o := range out {
		switch {
		case o.fate.Delivered():
			delivered++
		case o.fate.Dropped():
			dropped++
		default:
			t.Fatalf("packet %d: fate %v after the link drained", o.index, o.fate)
		}
	}
	if s.Packets != uint64(len(arrivals)) || delivered+dropped != len(arrivals) || s.InFlight != 0 ||
		s.DeliveredPackets != uint64(delivered) || s.DropsLoss+s.DropsQueue != uint64(dropped) ||
		g.DropsTail+g.DropsAQM+g.DropsOverflow != s.DropsQueue || g.Marks != uint64(countFate(out, Marked)) ||
		g.Sojourn.Count != int64(delivered) {
		t.Fatalf("not conserved: %d offered, %d delivered, %d dropped; stats %+v; gateway %+v", len(arrivals), delivered, dropped, s, g)
	}
	last := map[uint16]outcome{}
	for _, o := range out {
		if !o.fate.Delivered() {
			continue
		}
		var tx time.Duration
		if cfg.RateBPS > 0 {
			tx = TransmissionTime(o.size, cfg.RateBPS)
		}
		if earliest := o.at + tx + max(cfg.Delay-cfg.Jitter, 0); o.due < earliest {
			t.Fatalf("packet %d (%d B at %v) delivered at %v, before its serialisation ends at %v", o.index, o.size, o.at, o.due, earliest)
		}
		if o.sojourn < 0 || o.due < o.at+o.sojourn {
			t.Fatalf("packet %d: sojourn %v, due %v, arrived %v", o.index, o.sojourn, o.due, o.at)
		}
		if prev, ok := last[o.flow]; ok && o.due < prev.due {
			t.Fatalf("flow %d reordered: packet %d due %v after packet %d due %v", o.flow, o.index, o.due, prev.index, prev.due)
		}
		last[o.flow] = o
	}
	late, _ := runLink(t, cfg, arrivals, 7*time.Millisecond+123)
	for i := range out {
		if out[i].fate != late[i].fate || out[i].due != late[i].due || out[i].sojourn != late[i].sojourn {
			t.Fatalf("popping late changed packet %d: %v at %v (sojourn %v), popped on time %v at %v (sojourn %v)",
				i, late[i].fate, late[i].due, late[i].sojourn, out[i].fate, out[i].due, out[i].sojourn)
		}
	}
}

// TestDisciplineProperties runs checkProperties for every discipline on random arrivals, with a
// constant rate and a trace, with and without ECN, with delay, jitter and loss.
func TestDisciplineProperties(t *testing.T) {
	trace := mustTrace(t, strings.Repeat("1\n", 3)+"2\n3\n3\n5\n") // 7 opportunities per 5 ms: 16.8 Mbit/s
	for _, name := range profile.DisciplineNames() {
		for _, rate := range []string{"constant", "trace"} {
			for _, ecn := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/ecn=%v", name, rate, ecn), func(t *testing.T) {
					cfg := aqm(name, 10_000_000)
					if rate == "trace" {
						cfg.RateBPS, cfg.Trace = 0, trace
					}
					cfg.ECN, cfg.Delay, cfg.Jitter = ecn, 20*time.Millisecond, 3*time.Millisecond
					cfg.Loss = profile.Loss{Model: profile.LossBernoulli, P: 0.01}
					if name == profile.FQCoDel {
						cfg.Queue = profile.QueueLimit{Packets: 400} // overflow too
					}
					rng := rand.New(rand.NewPCG(5, 5))
					arrivals := merge(poisson(rng, 0, 8*time.Second, 7e6, 6, ecnNotECT), poisson(rng, 0, 8*time.Second, 7e6, 3, ecnECT0),
						cbr(2*time.Second, 3*time.Second, 25e6, 1500, 20, ecnECT1))
					checkProperties(t, cfg, arrivals)
				})
			}
		}
	}
}

// TestEveryDisciplineRegistered: each discipline the grammar knows is built by NewDiscipline, as
// the type its name says, and an unknown one is refused.
func TestEveryDisciplineRegistered(t *testing.T) {
	want := map[string]string{profile.DropTail: "*link.DropTailQueue", profile.CoDel: "*link.CoDelQueue", profile.FQCoDel: "*link.FQCoDelQueue",
		profile.PIE: "*link.PIEQueue", profile.DOCSISPIE: "*link.PIEQueue", profile.RED: "*link.REDQueue"}
	for _, info := range profile.Disciplines {
		q, err := NewDiscipline(DisciplineConfig{Discipline: info.Defaults, Limit: info.DefaultLimit, Sink: sinkFunc(func(*Packet, time.Duration, Fate) {}), RateBPS: 1e6})
		if err != nil || typeName(q) != want[info.Name] {
			t.Errorf("%s: %s, %v", info.Name, typeName(q), err)
		}
		delete(want, info.Name)
	}
	if len(want) != 0 {
		t.Errorf("disciplines the profile grammar does not list: %v", want)
	}
	if _, err := NewDiscipline(DisciplineConfig{Discipline: profile.Discipline{Name: "sfq"}}); err == nil {
		t.Error("an unknown discipline was built")
	}
	if _, err := NewDiscipline(DisciplineConfig{Discipline: profile.Discipline{Name: profile.CoDel, Target: time.Second, Interval: time.Millisecond}}); err == nil {
		t.Error("a CoDel with its target above its interval was built")
	}
}
