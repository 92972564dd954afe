package loadgen

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func TestParsePart(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Part
		ok   bool
	}{{"0/2", Part{0, 2}, true}, {"1/2", Part{1, 2}, true}, {"0/1", Part{0, 1}, true},
		{"2/2", Part{}, false}, {"-1/2", Part{}, false}, {"0/0", Part{}, false}, {"1", Part{}, false}, {"a/b", Part{}, false}, {"0/2000", Part{}, false}} {
		got, err := ParsePart(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParsePart(%q) = %v, %v", c.in, got, err)
		}
	}
}

// The parts' shares add up to the whole at every count, and each VU index is one part's.
func TestPartSharesAddUp(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for total := 0; total <= 50; total++ {
			sum := 0
			seen := map[int]bool{}
			for k := range n {
				p := Part{k, n}
				sum += p.share(total)
				for j := range p.share(total) {
					i := p.global(j)
					if seen[i] || i >= total {
						t.Fatalf("n %d total %d: VU %d given twice or out of range", n, total, i)
					}
					seen[i] = true
				}
			}
			if sum != total {
				t.Fatalf("n %d: shares of %d add up to %d", n, total, sum)
			}
		}
	}
}

// genOutput is a fake run's output as a generator's (its lines, its summary).
func genOutput(name string, fr *fakeRun) GeneratorOutput {
	return GeneratorOutput{Name: name, Intervals: fr.intervals, Summary: fr.sum}
}

func withPart(k, n int) func(*Config) {
	return func(c *Config) { c.Part, c.Histograms = Part{k, n}, true }
}

// Generators, each running its part of the scenario, merge exactly: every interval's counts are
// the parts' sums and its latency percentiles the merged histogram's. In the closed model
// (exponential think times, seeded by each VU's run-wide index) the merge is the run one
// generator makes of the whole, value for value. In the open model every arrival is one part's,
// so arrivals are conserved (pages + failed + dropped), but each part queues for its own share of
// max_vus: a page that one process would give to another part's idle VU waits or is dropped.
func TestMergeEqualsTheWholeRun(t *testing.T) {
	specs := map[string]string{
		"closed": `{"protocol":"h2","interval_s":1,"seed":7,"think":{"mean_s":0.4,"distribution":"exponential"},
			"scenario":{"start":1,"stages":[{"duration_s":6,"target":13},{"duration_s":3,"target":5}]}}`,
		"open": `{"protocol":"h2","interval_s":1,"scenario":{"model":"open","start":5,"max_vus":9,"stages":[{"duration_s":8,"rate":23}]}}`,
	}
	// page time varies with the instant and so differs between VUs and intervals
	pageTime := func(at time.Duration) time.Duration { return 80*time.Millisecond + (at%(370*time.Millisecond))*3 }
	fail := func(at time.Duration) bool { return at%(700*time.Millisecond) < 20*time.Millisecond }
	for name, js := range specs {
		t.Run(name, func(t *testing.T) {
			spec := mustDecode(t, js)
			whole := runFake(t, spec, pageTime, fail, 0, withPart(0, 1))
			for _, n := range []int{2, 3} {
				var gens []GeneratorOutput
				for k := range n {
					fr := runFake(t, spec, pageTime, fail, 0, withPart(k, n))
					if fr.err != nil {
						t.Fatal(fr.err)
					}
					if fr.sum.Part != fmt.Sprintf("%d/%d", k, n) {
						t.Errorf("part %d/%d: summary part %q", k, n, fr.sum.Part)
					}
					gens = append(gens, genOutput(fmt.Sprintf("g%d", k), fr))
				}
				m, err := Merge(spec, gens)
				if err != nil {
					t.Fatal(err)
				}
				if len(m.Intervals) != len(whole.intervals) {
					t.Fatalf("n %d: %d merged intervals, the whole run has %d", n, len(m.Intervals), len(whole.intervals))
				}
				for i, got := range m.Intervals {
					want := whole.intervals[i]
					var pages, hits int64
					var hists []string
					for _, g := range gens {
						pages += g.Intervals[i].Pages
						hits += g.Intervals[i].Hits
						hists = append(hists, g.Intervals[i].PageHist)
					}
					if got.Pages != pages || got.Hits != hits {
						t.Errorf("n %d interval %d: %d pages, %d hits; the generators' sum %d, %d", n, i, got.Pages, got.Hits, pages, hits)
					}
					h, err := mergedHist(hists...)
					if err != nil {
						t.Fatal(err)
					}
					if got.PageMs != nil && got.PageMs.P90 != float64(h.ValueAtQuantile(90))/1000 {
						t.Errorf("n %d interval %d: p90 %v, the merged histogram's %v", n, i, got.PageMs.P90, float64(h.ValueAtQuantile(90))/1000)
					}
					// (vus at the interval's end is left out: a VU leaving at the boundary's very instant
					// is counted before or after it as the goroutines happen to run)
					if name == "closed" && (got.Pages != want.Pages || got.PagesFailed != want.PagesFailed || got.Hits != want.Hits ||
						got.Dropped != want.Dropped || got.Errors != want.Errors || !reflect.DeepEqual(got.PageMs, want.PageMs) ||
						!reflect.DeepEqual(got.RequestMs, want.RequestMs) || got.partial != want.partial) {
						t.Errorf("n %d interval %d: merged %+v\nwhole %+v", n, i, got, want)
					}
					if got.Degraded || len(got.Generators) != n || got.Generators[n-1].Part != fmt.Sprintf("%d/%d", n-1, n) {
						t.Errorf("n %d interval %d: degraded %v, %d generators", n, i, got.Degraded, len(got.Generators))
					}
				}
				s, w := m.Summary, whole.sum
				if name == "closed" && (s.Totals.Pages != w.Totals.Pages || !reflect.DeepEqual(s.Totals.PageMs, w.Totals.PageMs) ||
					!reflect.DeepEqual(s.Outcomes.MaxPagesPerS, w.Outcomes.MaxPagesPerS)) {
					t.Errorf("n %d: merged summary %+v\nwhole %+v", n, s, w)
				}
				arrivals := func(t Totals) int64 { return t.Pages + t.PagesFailed + t.Dropped }
				if arrivals(s.Totals) != arrivals(w.Totals) || s.Degraded || len(s.Generators) != n {
					t.Errorf("n %d: %d arrivals, degraded %v, %d generators; the whole run %d arrivals", n, arrivals(s.Totals), s.Degraded, len(s.Generators), arrivals(w.Totals))
				}
				var share float64
				for _, g := range s.Generators {
					share += g.Share
				}
				if share < 0.999 || share > 1.001 {
					t.Errorf("n %d: the generators' shares add up to %v", n, share)
				}
			}
		})
	}
}

// A generator that ends without its summary was lost: the intervals it did not report are marked
// degraded and name it; those it reported are merged as usual.
func TestMergeMarksALostGenerator(t *testing.T) {
	spec := mustDecode(t, `{"protocol":"h1","interval_s":1,"think":{"mean_s":0.2},"scenario":{"start":4,"stages":[{"duration_s":8,"target":4}]}}`)
	pageTime := func(time.Duration) time.Duration { return 150 * time.Millisecond }
	a := runFake(t, spec, pageTime, nil, 0, withPart(0, 2))
	b := runFake(t, spec, pageTime, nil, 0, withPart(1, 2))
	lost := genOutput("b", b)
	lost.Intervals, lost.Summary = lost.Intervals[:3], nil // killed during interval 3
	m, err := Merge(spec, []GeneratorOutput{genOutput("a", a), lost})
	if err != nil {
		t.Fatal(err)
	}
	for i, iv := range m.Intervals {
		if iv.Degraded != (i >= 3) || (i >= 3 && !reflect.DeepEqual(iv.GeneratorsLost, []string{"b"})) {
			t.Errorf("interval %d: degraded %v, lost %v", i, iv.Degraded, iv.GeneratorsLost)
		}
		if i < 3 && iv.Pages != a.intervals[i].Pages+b.intervals[i].Pages {
			t.Errorf("interval %d: %d pages, the generators' %d + %d", i, iv.Pages, a.intervals[i].Pages, b.intervals[i].Pages)
		}
		if i >= 3 && (iv.Pages != a.intervals[i].Pages || !iv.Generators[1].Lost) {
			t.Errorf("interval %d: %d pages, generator a's %d; shares %+v", i, iv.Pages, a.intervals[i].Pages, iv.Generators)
		}
	}
	s := m.Summary
	if !s.Degraded || !reflect.DeepEqual(s.GeneratorsLost, []string{"b"}) || !s.Generators[1].Lost || s.Generators[1].LostAfterS != 3 {
		t.Errorf("summary: degraded %v, lost %v, generators %+v", s.Degraded, s.GeneratorsLost, s.Generators)
	}
}

// MergeFrom, given each generator's lines from interval K on only (a cluster run's live progress:
// loadmerge --from K with what arrived since the last update), gives the very intervals the whole
// run's Merge gives from K on — a generator lost on the way included — and merges no interval
// it was not given: the work per update is the new intervals', not the run's so far.
func TestMergeFromMergesOnlyTheNewIntervals(t *testing.T) {
	spec := mustDecode(t, `{"protocol":"h1","interval_s":1,"think":{"mean_s":0.2},"scenario":{"start":4,"stages":[{"duration_s":9,"target":4}]}}`)
	pageTime := func(at time.Duration) time.Duration { return 90*time.Millisecond + (at%(310*time.Millisecond))*2 }
	a := runFake(t, spec, pageTime, nil, 0, withPart(0, 2))
	b := runFake(t, spec, pageTime, nil, 0, withPart(1, 2))
	lost := genOutput("b", b)
	lost.Intervals, lost.Summary = lost.Intervals[:4], nil // killed during interval 4
	whole, err := Merge(spec, []GeneratorOutput{genOutput("a", a), lost})
	if err != nil {
		t.Fatal(err)
	}
	slice := func(ivs []Interval, from, to int) []Interval { return ivs[min(from, len(ivs)):min(to, len(ivs))] }
	var got []Interval
	for from := 0; from < len(a.intervals); from += 3 { // three intervals per update
		step := []GeneratorOutput{
			{Name: "a", Intervals: slice(a.intervals, from, from+3)},
			{Name: "b", Intervals: slice(lost.Intervals, from, from+3)},
		}
		ivs, err := MergeFrom(spec, step, from)
		if err != nil {
			t.Fatalf("from %d: %v", from, err)
		}
		if want := len(step[0].Intervals); len(ivs) != want {
			t.Fatalf("from %d: %d intervals merged; want the %d given", from, len(ivs), want)
		}
		got = append(got, ivs...)
	}
	if len(got) != len(whole.Intervals) {
		t.Fatalf("%d intervals in steps, the whole merge %d", len(got), len(whole.Intervals))
	}
	for i := range got {
		w := whole.Intervals[i]
		for k := range w.Generators {
			if w.Generators[k].Lost { // an update without a lost generator's lines has not seen its part
				w.Generators[k].Part = got[i].Generators[k].Part
			}
		}
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("interval %d from the steps:\n%+v\nthe whole merge's:\n%+v", i, got[i], w)
		}
	}
	if !got[len(got)-1].Degraded || got[3].Degraded || !got[4].Degraded {
		t.Errorf("degraded: %v %v %v; want from interval 4 on", got[3].Degraded, got[4].Degraded, got[len(got)-1].Degraded)
	}
	// a line out of place names what was wanted
	if _, err := MergeFrom(spec, []GeneratorOutput{{Name: "a", Intervals: a.intervals[2:4]}}, 1); err == nil ||
		err.Error() != "merge: generator a: interval line 1 has index 2, want 1" {
		t.Errorf("out of place: %v", err)
	}
}

// Intervals without histograms (loadgen run without --histograms) cannot be merged: one error
// naming the generator and the interval.
func TestMergeNeedsHistograms(t *testing.T) {
	spec := mustDecode(t, `{"protocol":"h1","interval_s":1,"think":{"mean_s":0.2},"scenario":{"start":2,"stages":[{"duration_s":3,"target":2}]}}`)
	fr := runFake(t, spec, func(time.Duration) time.Duration { return 100 * time.Millisecond }, nil, 0)
	_, err := Merge(spec, []GeneratorOutput{genOutput("x", fr)})
	if err == nil || err.Error() != fmt.Sprintf("merge: generator x interval 0: page_hist holds 0 pages, the line says %d (was loadgen run with --histograms?)", fr.intervals[0].Pages) {
		t.Errorf("err %v", err)
	}
}

// mergedHist merges encoded histograms (what a merged interval's latencies must be read from).
func mergedHist(encoded ...string) (*hdrhistogram.Histogram, error) {
	out := newHist()
	for _, e := range encoded {
		h, err := decodeHist(e)
		if err != nil {
			return nil, err
		}
		out.Merge(h)
	}
	return out, nil
}
