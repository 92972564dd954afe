// Package units is the one definition of the units that wirelab's text values carry — durations,
// bit rates and sizes — and of the exact decimal NUMBER they scale (docs/profile-grammar.md,
// "Values and units"; a test holds the doc's table to these). The network profile grammar
// (engine/link/profile) and synthetic page names (engine/page) parse with it; the control plane
// reads the same tables from `wirelab-engine profiles ls` through wirelab/_engine_facts.json.
package units

import (
	"fmt"
	"strings"
)

// Unit is a unit name and what one of it is worth in the base unit of its table.
type Unit struct {
	Name   string `json:"name"`
	Factor int64  `json:"factor"`
}

// Durations are in nanoseconds. Names are case-sensitive.
var Durations = []Unit{{"us", 1_000}, {"ms", 1_000_000}, {"s", 1_000_000_000}}

// Rates are in bits per second. Names match in any case (10Mbit = 10mbit).
var Rates = []Unit{{"bit", 1}, {"kbit", 1_000}, {"mbit", 1_000_000}, {"gbit", 1_000_000_000}}

// ByteRates are rate units refused by name (in any case): tc reads them as bytes per second and
// others as bits, so a rate written with one of them is ambiguous.
var ByteRates = []string{"bps", "kbps", "mbps", "gbps", "b", "kb", "mb", "gb", "kib", "mib", "gib"}

// Sizes are in bytes. Names are case-sensitive: kB and MB are decimal (1000, 1000²), KiB and MiB
// binary (1024, 1024²); KB, kb or K are refused, since they mean 1000 to some and 1024 to others.
// A size always has a unit: a bare number is not a size (in a queue it counts packets).
var Sizes = []Unit{{"B", 1}, {"kB", 1_000}, {"KiB", 1_024}, {"MB", 1_000_000}, {"MiB", 1_048_576}}

// Lookup returns the factor of name in table, matching exactly.
func Lookup(table []Unit, name string) (int64, bool) {
	for _, u := range table {
		if u.Name == name {
			return u.Factor, true
		}
	}
	return 0, false
}

// Names lists the names of table, in its order.
func Names(table []Unit) []string {
	out := make([]string, len(table))
	for i, u := range table {
		out[i] = u.Name
	}
	return out
}

// SizeAllowed says what a SIZE is, for error messages.
const SizeAllowed = "want a number and a unit B, kB, KiB, MB or MiB (e.g. 10kB; kB = 1000 bytes, KiB = 1024)"

// ParseSize parses SIZE := NUMBER UNIT, UNIT ∈ Sizes, into a whole number of bytes at most max.
// The arithmetic is exact: 1.1kB is 1100 bytes, 0.5B is refused.
func ParseSize(s string, max int64) (int64, error) {
	number, unit := SplitNumber(s)
	d, ok := ParseDecimal(number)
	if !ok {
		return 0, fmt.Errorf("%q is not a size: %s", s, SizeAllowed)
	}
	mult, ok := Lookup(Sizes, unit)
	if !ok {
		if unit == "" {
			return 0, fmt.Errorf("%q has no unit: %s", s, SizeAllowed)
		}
		return 0, fmt.Errorf("%q has an unknown unit %q: %s", s, unit, SizeAllowed)
	}
	if d.CmpScaled(mult, max) > 0 {
		return 0, fmt.Errorf("%q is larger than %d bytes", s, max)
	}
	n, exact := d.RoundScaled(mult)
	if !exact {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	return n, nil
}

// FormatSize writes n in the largest unit of Sizes that divides it exactly (decimal before binary
// at the same scale), so that ParseSize(FormatSize(n)) == n.
func FormatSize(n int64) string {
	for _, name := range []string{"MB", "MiB", "kB", "KiB"} {
		mult, _ := Lookup(Sizes, name)
		if n != 0 && n%mult == 0 {
			return fmt.Sprintf("%d%s", n/mult, name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// IsByteRate reports whether unit (any case) is one of ByteRates.
func IsByteRate(unit string) bool {
	for _, u := range ByteRates {
		if strings.EqualFold(u, unit) {
			return true
		}
	}
	return false
}
