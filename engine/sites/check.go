package sites

import (
	"fmt"
	"slices"

	"github.com/wirelab/wirelab/engine/probe"
)

// Mismatches compares a probe record of the site with Expected: one line per difference (none:
// the probe classified the site correctly).
func (s Site) Mismatches(rec probe.Record) []string {
	want, refused := s.Expected()
	var out []string
	if refused {
		if rec.Refused == "" {
			out = append(out, fmt.Sprintf("%s: not refused (addr %q)", s.Name, rec.Addr))
		}
		return out
	}
	if rec.Refused != "" || rec.Error != "" {
		return append(out, fmt.Sprintf("%s: refused %q, error %q", s.Name, rec.Refused, rec.Error))
	}
	for _, p := range probe.Protocols {
		got, w := rec.Protocols[p], want[p]
		if got == nil {
			out = append(out, fmt.Sprintf("%s %s: missing", s.Name, p))
			continue
		}
		by := slices.Sorted(slices.Values(got.AnnouncedBy))
		if !equalBool(got.Announced, w.Announced) || !slices.Equal(by, w.AnnouncedBy) {
			out = append(out, fmt.Sprintf("%s %s: announced %s by %v, want %s by %v", s.Name, p, show(got.Announced), by, show(w.Announced), w.AnnouncedBy))
		}
		if got.Served != w.Served {
			out = append(out, fmt.Sprintf("%s %s: served %v (status %d, error %q), want %v", s.Name, p, got.Served, got.Status, got.Error, w.Served))
		}
	}
	return out
}

func equalBool(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func show(b *bool) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprint(*b)
}
