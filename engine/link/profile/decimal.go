package profile

import (
	"math/big"
	"strconv"
	"strings"
)

// decimal is a non-negative decimal number exactly as written: NUMBER := DIGITS ["." DIGITS],
// ASCII digits only, no sign, no exponent. Its value is mantissa / 10^frac. All conversions are
// exact (big integers), so rounding happens once, at the end, by a documented rule.
type decimal struct {
	mantissa *big.Int
	frac     int // digits after the point
}

// splitNumber splits s into its leading NUMBER-ish part (digits and points) and the rest (the
// unit). It does not validate the number.
func splitNumber(s string) (number, unit string) {
	i := 0
	for i < len(s) && (isDigit(s[i]) || s[i] == '.') {
		i++
	}
	return s[:i], s[i:]
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// parseDecimal parses NUMBER := DIGITS ["." DIGITS].
func parseDecimal(s string) (decimal, bool) {
	intPart, fracPart, hasPoint := strings.Cut(s, ".")
	if !allDigits(intPart) || (hasPoint && !allDigits(fracPart)) {
		return decimal{}, false
	}
	m, ok := new(big.Int).SetString(intPart+fracPart, 10)
	if !ok {
		return decimal{}, false
	}
	return decimal{mantissa: m, frac: len(fracPart)}, true
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

func (d decimal) isZero() bool { return d.mantissa.Sign() == 0 }

// cmpScaled compares d × mult with bound (mult, bound ≥ 0) exactly.
func (d decimal) cmpScaled(mult int64, bound int64) int {
	lhs := new(big.Int).Mul(d.mantissa, big.NewInt(mult))
	rhs := new(big.Int).Mul(big.NewInt(bound), pow10(d.frac))
	return lhs.Cmp(rhs)
}

// roundScaled returns d × mult rounded to the nearest integer, halves rounded up (away from zero),
// and whether the product was already an integer. Callers bound-check with cmpScaled first, so
// the result fits in an int64.
func (d decimal) roundScaled(mult int64) (value int64, exact bool) {
	num := new(big.Int).Mul(d.mantissa, big.NewInt(mult))
	den := pow10(d.frac)
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	exact = r.Sign() == 0
	if new(big.Int).Lsh(r, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64(), exact
}

// float returns d × 10^-shift as the float64 nearest to the exact value (strconv.ParseFloat is
// correctly rounded, as is Python's float(), so both implementations agree bit for bit).
func (d decimal) float(shift int) float64 {
	f, err := strconv.ParseFloat(d.mantissa.String()+"e-"+strconv.Itoa(d.frac+shift), 64)
	if err != nil { // cannot happen for a valid mantissa; a huge exponent underflows to 0 without error
		return 0
	}
	return f
}

// formatScaled writes v / 10^digits as a plain decimal with trailing zeros removed
// (formatScaled(1500, 3) = "1.5").
func formatScaled(v int64, digits int) string {
	s := strconv.FormatInt(v, 10)
	if digits == 0 {
		return s
	}
	for len(s) <= digits {
		s = "0" + s
	}
	intPart, fracPart := s[:len(s)-digits], strings.TrimRight(s[len(s)-digits:], "0")
	if fracPart == "" {
		return intPart
	}
	return intPart + "." + fracPart
}
