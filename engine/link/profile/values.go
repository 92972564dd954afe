package profile

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wirelab/wirelab/engine/internal/units"
)

// Limits of the grammar (docs/profile-grammar.md). Values outside them are refused with an Error.
const (
	MaxDuration      = time.Hour       // DURATION ≤ 3600s (delays, jitter, origin_delay)
	MinRateBPS       = 1_000           // RATE ≥ 1kbit …
	MaxRateBPS       = 100_000_000_000 // … ≤ 100gbit
	MaxQueuePackets  = 1_000_000_000   // COUNT ≤ 10^9
	MinQueueBytes    = 1_500           // SIZE ≥ one MTU-sized packet
	MaxQueueBytes    = 1_000_000_000_000
	MaxWindow        = 1000 // iw, irw ≤ 1000 segments
	MaxTCPPlus       = 32   // tcpplus ≤ 32 (engine/tcpplus registers wl_cubicp1 … wl_cubicp32)
	MaxOrigin        = 64   // origin_delay names origins 1 … 64
	DefaultQueueSize = 256  // packets
)

const (
	durationAllowed = "use a number with us, ms or s (e.g. 150ms), at most 3600s"
	rateAllowed     = "use a number with bit, kbit, mbit or gbit from 1kbit to 100gbit (e.g. 10mbit), or unlimited"
	probAllowed     = "use a percentage (0.5%) or a fraction (0.005) between 0 and 1"
	lossAllowed     = probAllowed + ", or ge:P:R[:1-H[:1-K]] (e.g. ge:1%:30%)"
	queueAllowed    = "use packets (256, 256p, 256pkt, 256packets), bytes (64kB, 64KiB, 1MB, 1MiB, 150000B, at least 1500B), both (100/150000B), or infinite"
	windowAllowed   = "use a whole number of segments from 1 to 1000"
	ccAllowed       = "use cubic, bbr or reno"
	tcpplusAllowed  = "use a whole number of connections N from 1 to 32 (TCP+ makes one connection behave like N)"
	originAllowed   = "use N:DURATION entries separated by / with N from 1 to 64 (e.g. 2:40ms/3:80ms)"
	pathAllowed     = "give the path of a mahimahi trace file"
)

// numberProblem explains why the numeric part of s (before its unit) is not a NUMBER.
func numberProblem(s string) string {
	switch {
	case strings.HasPrefix(s, "-"):
		return "is negative"
	case strings.HasPrefix(s, "+"):
		return "has a sign (numbers are written without one)"
	}
	number, rest := units.SplitNumber(s)
	if number != "" && len(rest) > 1 && (rest[0] == 'e' || rest[0] == 'E') && (units.IsDigit(rest[1]) || rest[1] == '-' || rest[1] == '+') {
		return "uses an exponent (write plain decimals: 1000, not 1e3)"
	}
	if number == "" {
		return "is not a number"
	}
	return "is not a plain decimal number (digits with at most one point, e.g. 1.5)"
}

// parseNumberUnit splits s into a valid NUMBER and its unit, or explains what is wrong.
func parseNumberUnit(s string) (units.Decimal, string, string) {
	number, unit := units.SplitNumber(s)
	d, ok := units.ParseDecimal(number)
	if !ok || (unit != "" && (unit[0] == 'e' || unit[0] == 'E') && len(unit) > 1 && (units.IsDigit(unit[1]) || unit[1] == '-' || unit[1] == '+')) {
		return units.Decimal{}, "", numberProblem(s)
	}
	return d, unit, ""
}

// parseDuration parses DURATION := NUMBER UNIT | a bare zero, UNIT ∈ us, ms, s (case-sensitive).
// The result is rounded to the nearest ns, halves up.
func parseDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, newError(field, s, "is empty", durationAllowed)
	}
	d, unit, problem := parseNumberUnit(s)
	if problem != "" {
		return 0, newError(field, s, problem, durationAllowed)
	}
	if unit == "" {
		if d.IsZero() {
			return 0, nil
		}
		return 0, newError(field, s, "has no unit", durationAllowed)
	}
	mult, ok := units.Lookup(units.Durations, unit)
	if !ok {
		return 0, newError(field, s, fmt.Sprintf("has an unknown unit %q", unit), durationAllowed)
	}
	if d.CmpScaled(mult, int64(MaxDuration)) > 0 {
		return 0, newError(field, s, "is too long", durationAllowed)
	}
	ns, _ := d.RoundScaled(mult)
	return time.Duration(ns), nil
}

// parseRate parses RATE := NUMBER UNIT | unlimited, UNIT ∈ bit, kbit, mbit, gbit (any case),
// into bits/s (0 = unlimited), rounded to the nearest bit/s, halves up. The range applies to the
// value as written.
func parseRate(field, s string) (int64, error) {
	if s == "" {
		return 0, newError(field, s, "is empty", rateAllowed)
	}
	if s == "unlimited" {
		return 0, nil
	}
	d, unit, problem := parseNumberUnit(s)
	if problem != "" {
		return 0, newError(field, s, problem, rateAllowed)
	}
	if unit == "" {
		return 0, newError(field, s, "has no unit", rateAllowed)
	}
	lower := strings.ToLower(unit)
	mult, ok := units.Lookup(units.Rates, lower)
	if !ok {
		if base, ok := strings.CutSuffix(lower, "/s"); ok && isRateUnit(base) {
			return 0, newError(field, s, fmt.Sprintf("writes the unit as %q", unit), fmt.Sprintf("write it without /s: bit, kbit, mbit or gbit (e.g. 10%s)", base))
		}
		if units.IsByteRate(lower) {
			return 0, newError(field, s, fmt.Sprintf("uses %q, which tc reads as bytes (per second) and others as bits", unit), "write rates in bit, kbit, mbit or gbit (e.g. 10mbit), from 1kbit to 100gbit")
		}
		return 0, newError(field, s, fmt.Sprintf("has an unknown unit %q", unit), rateAllowed)
	}
	if d.CmpScaled(mult, MinRateBPS) < 0 {
		return 0, newError(field, s, "is below 1kbit", rateAllowed)
	}
	if d.CmpScaled(mult, MaxRateBPS) > 0 {
		return 0, newError(field, s, "is above 100gbit", rateAllowed)
	}
	bps, _ := d.RoundScaled(mult)
	return bps, nil
}

// parseProb parses PROB := NUMBER "%" | NUMBER (a fraction) in [0, 1]. what names the part being
// parsed inside a larger value (e.g. "parameter r"), or is empty.
func parseProb(field, whole, s, what string) (float64, error) {
	prefix := ""
	if what != "" {
		prefix = what + " "
	}
	if s == "" {
		return 0, newError(field, whole, prefix+"is empty", lossAllowed)
	}
	number, shift := s, 0
	if strings.HasSuffix(s, "%") {
		number, shift = s[:len(s)-1], 2
	}
	d, unit, problem := parseNumberUnit(number)
	if problem != "" {
		return 0, newError(field, whole, prefix+problem, lossAllowed)
	}
	if unit != "" {
		return 0, newError(field, whole, fmt.Sprintf("%shas an unknown unit %q", prefix, unit), lossAllowed)
	}
	limit := int64(1) // the value as written may be at most 1 (or 100 with %)
	if shift == 2 {
		limit = 100
	}
	if d.CmpScaled(1, limit) > 0 {
		return 0, newError(field, whole, prefix+"is more than 100%", lossAllowed)
	}
	return d.Float(shift), nil
}

// parseLoss parses LOSS := PROB | ge:P:R[:1-H[:1-K]].
func parseLoss(field, s string) (Loss, error) {
	if rest, ok := strings.CutPrefix(s, "ge:"); ok {
		parts := strings.Split(rest, ":")
		if len(parts) < 2 {
			return Loss{}, newError(field, s, "needs at least p and r", "write ge:P:R[:1-H[:1-K]] as in netem's gemodel (e.g. ge:1%:30%)")
		}
		if len(parts) > 4 {
			return Loss{}, newError(field, s, fmt.Sprintf("has %d parameters, more than four", len(parts)), "write ge:P:R[:1-H[:1-K]] as in netem's gemodel (e.g. ge:1%:30%)")
		}
		names := []string{"p", "r", "1-h", "1-k"}
		vals := []float64{0, 0, 1, 0} // netem's defaults for 1-h (100 %) and 1-k (0 %)
		for i, part := range parts {
			v, err := parseProb(field, s, part, "parameter "+names[i])
			if err != nil {
				return Loss{}, err
			}
			vals[i] = v
		}
		return Loss{Model: LossGilbertElliott, P: vals[0], R: vals[1], OneMinusH: vals[2], OneMinusK: vals[3]}, nil
	}
	p, err := parseProb(field, s, s, "")
	if err != nil {
		return Loss{}, err
	}
	if p == 0 {
		return Loss{Model: LossNone}, nil
	}
	return Loss{Model: LossBernoulli, P: p}, nil
}

// countUnits may follow a COUNT of packets (none, as in 256, is the usual way).
var countUnits = map[string]bool{"": true, "p": true, "pkt": true, "packets": true}

// parseQueue parses QUEUE := COUNT | SIZE | COUNT "/" SIZE | infinite.
func parseQueue(field, s string) (QueueLimit, error) {
	switch {
	case s == "":
		return QueueLimit{}, newError(field, s, "is empty", queueAllowed)
	case s == "infinite":
		return QueueLimit{}, nil
	case strings.HasPrefix(s, "-"):
		return QueueLimit{}, newError(field, s, "is negative", queueAllowed)
	}
	parts := strings.Split(s, "/")
	if len(parts) > 2 {
		return QueueLimit{}, newError(field, s, "has more than one /", queueAllowed)
	}
	var q QueueLimit
	for i, part := range parts {
		d, unit, problem := parseNumberUnit(part)
		if problem != "" {
			return QueueLimit{}, newError(field, s, problem, queueAllowed)
		}
		mult, isSize := units.Lookup(units.Sizes, unit)
		isCount := countUnits[unit]
		switch {
		case !isCount && !isSize:
			return QueueLimit{}, newError(field, s, fmt.Sprintf("has an unknown unit %q (units are case-sensitive)", unit), queueAllowed)
		case len(parts) == 2 && i == 0 && !isCount:
			return QueueLimit{}, newError(field, s, "has a size before the /", "write COUNT/SIZE, e.g. 100/150000B")
		case len(parts) == 2 && i == 1 && !isSize:
			return QueueLimit{}, newError(field, s, "has no size unit after the /", "write COUNT/SIZE, e.g. 100/150000B")
		case isCount:
			if d.Frac() != 0 {
				return QueueLimit{}, newError(field, s, "is not a whole number of packets", queueAllowed)
			}
			if d.IsZero() {
				return QueueLimit{}, newError(field, s, "is zero: a queue that drops everything is not a network", queueAllowed)
			}
			if d.CmpScaled(1, MaxQueuePackets) > 0 {
				return QueueLimit{}, newError(field, s, "is more than 10^9 packets", queueAllowed)
			}
			q.Packets, _ = d.RoundScaled(1)
		default:
			if d.IsZero() {
				return QueueLimit{}, newError(field, s, "is zero: a queue that drops everything is not a network", queueAllowed)
			}
			if d.CmpScaled(mult, MinQueueBytes) < 0 {
				return QueueLimit{}, newError(field, s, "is smaller than one 1500-byte packet", queueAllowed)
			}
			if d.CmpScaled(mult, MaxQueueBytes) > 0 {
				return QueueLimit{}, newError(field, s, "is more than 10^12 bytes", queueAllowed)
			}
			bytes, exact := d.RoundScaled(mult)
			if !exact {
				return QueueLimit{}, newError(field, s, "is not a whole number of bytes", queueAllowed)
			}
			q.Bytes = bytes
		}
	}
	return q, nil
}

// parseWindow parses INT 1–1000 (iw, irw).
func parseWindow(field, s string) (int, error) { return parseWhole(field, s, MaxWindow, windowAllowed) }

// parseTCPPlus parses tcpplus: a whole number from 1 to MaxTCPPlus.
func parseTCPPlus(field, s string) (int, error) {
	return parseWhole(field, s, MaxTCPPlus, tcpplusAllowed)
}

// parseWhole parses a whole number from 1 to max, written in decimal digits only (leading zeros
// allowed); allowed is the error's "what is allowed".
func parseWhole(field, s string, max int, allowed string) (int, error) {
	if s == "" {
		return 0, newError(field, s, "is empty", allowed)
	}
	if !units.AllDigits(s) {
		return 0, newError(field, s, "is not a whole number", allowed)
	}
	if len(strings.TrimLeft(s, "0")) > len(strconv.Itoa(max)) {
		return 0, newError(field, s, "is out of range", allowed)
	}
	n, _ := strconv.Atoi(s) // no more significant digits than max: cannot fail
	if n < 1 || n > max {
		return 0, newError(field, s, "is out of range", allowed)
	}
	return n, nil
}

// checkTCPPlus refuses TCP+ with a congestion control other than cubic: wl_cubicp<N> is cubic with
// TCP+'s backoff, so it replaces cc on the server's routes.
func (r *Resolved) checkTCPPlus(field string) error {
	if r.TCPPlus != 0 && r.CC != "cubic" {
		return newError(field, strconv.Itoa(r.TCPPlus), "cannot be combined with cc="+r.CC,
			"TCP+ is cubic with a smaller backoff (wl_cubicp<N>): use cc=cubic (the default) or drop tcpplus")
	}
	return nil
}

// CongestionControls are the values `cc` accepts, in documented order.
var CongestionControls = []string{"cubic", "bbr", "reno"}

func parseCC(field, s string) (string, error) {
	for _, c := range CongestionControls {
		if s == c {
			return s, nil
		}
	}
	return "", newError(field, s, "is not a supported congestion control", ccAllowed)
}

// parseOriginDelay parses N:DURATION ("/" N:DURATION)* into extra RTT per origin.
func parseOriginDelay(field, s string) (map[int]time.Duration, error) {
	if s == "" {
		return nil, newError(field, s, "is empty", originAllowed)
	}
	out := make(map[int]time.Duration)
	for _, entry := range strings.Split(s, "/") {
		n, dur, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, newError(field, s, fmt.Sprintf("has an entry %q without a colon", entry), originAllowed)
		}
		if !units.AllDigits(n) {
			return nil, newError(field, s, fmt.Sprintf("has an origin %q that is not a whole number", n), originAllowed)
		}
		origin := MaxOrigin + 1
		if len(strings.TrimLeft(n, "0")) <= 3 {
			origin, _ = strconv.Atoi(n) // at most 3 significant digits: cannot fail
		}
		if origin < 1 || origin > MaxOrigin {
			return nil, newError(field, s, fmt.Sprintf("names origin %s (origins are numbered from 1 to %d)", n, MaxOrigin), originAllowed)
		}
		if _, dup := out[origin]; dup {
			return nil, newError(field, s, fmt.Sprintf("names origin %d twice", origin), originAllowed)
		}
		d, err := parseDuration(field, dur)
		if err != nil {
			e := err.(*Error)
			return nil, newError(field, s, fmt.Sprintf("has a delay %q for origin %d that %s", dur, origin, e.Problem), originAllowed)
		}
		out[origin] = d
	}
	return out, nil
}

func parseTracePath(field, s string) (string, error) {
	if problem := pathProblem(s); problem != "" {
		return "", newError(field, s, problem, pathAllowed)
	}
	return s, nil
}

// pathProblem says what makes s unusable as a PATH, or "".
func pathProblem(s string) string {
	switch {
	case s == "":
		return "is an empty path"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.ContainsFunc(s, unicode.IsControl):
		return "contains a control character"
	case strings.Contains(s, ","):
		return "contains a comma, which a profile string cannot carry"
	case trimBlank(s) != s:
		return "has blanks around it, which a profile string cannot carry"
	}
	return ""
}

func isRateUnit(name string) bool {
	_, ok := units.Lookup(units.Rates, name)
	return ok
}
