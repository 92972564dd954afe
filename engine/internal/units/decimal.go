package units

import (
	"math/big"
	"strconv"
	"strings"
)

// Decimal is a non-negative decimal number exactly as written: NUMBER := DIGITS ["." DIGITS],
// ASCII digits only, no sign, no exponent. Its value is mantissa / 10^frac. All conversions are
// exact (big integers), so rounding happens once, at the end, by a documented rule.
type Decimal struct {
	mantissa *big.Int
	frac     int // digits after the point
}

// SplitNumber splits s into its leading NUMBER-ish part (digits and points) and the rest (the
// unit). It does not validate the number.
func SplitNumber(s string) (number, unit string) {
	i := 0
	for i < len(s) && (IsDigit(s[i]) || s[i] == '.') {
		i++
	}
	return s[:i], s[i:]
}

func IsDigit(c byte) bool { return '0' <= c && c <= '9' }

func AllDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !IsDigit(s[i]) {
			return false
		}
	}
	return true
}

// ParseDecimal parses NUMBER := DIGITS ["." DIGITS].
func ParseDecimal(s string) (Decimal, bool) {
	intPart, fracPart, hasPoint := strings.Cut(s, ".")
	if !AllDigits(intPart) || (hasPoint && !AllDigits(fracPart)) {
		return Decimal{}, false
	}
	m, ok := new(big.Int).SetString(intPart+fracPart, 10)
	if !ok {
		return Decimal{}, false
	}
	return Decimal{mantissa: m, frac: len(fracPart)}, true
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

func (d Decimal) IsZero() bool { return d.mantissa.Sign() == 0 }

// Frac is the number of digits written after the point (0 for a whole number as written).
func (d Decimal) Frac() int { return d.frac }

// CmpScaled compares d × mult with bound (mult, bound ≥ 0) exactly.
func (d Decimal) CmpScaled(mult int64, bound int64) int {
	lhs := new(big.Int).Mul(d.mantissa, big.NewInt(mult))
	rhs := new(big.Int).Mul(big.NewInt(bound), pow10(d.frac))
	return lhs.Cmp(rhs)
}

// RoundScaled returns d × mult rounded to the nearest integer, halves rounded up (away from zero),
// and whether the product was already an integer. Callers bound-check with CmpScaled first, so
// the result fits in an int64.
func (d Decimal) RoundScaled(mult int64) (value int64, exact bool) {
	num := new(big.Int).Mul(d.mantissa, big.NewInt(mult))
	den := pow10(d.frac)
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	exact = r.Sign() == 0
	if new(big.Int).Lsh(r, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64(), exact
}

// Float returns d × 10^-shift as the float64 nearest to the exact value (strconv.ParseFloat is
// correctly rounded, as is Python's float(), so both implementations agree bit for bit).
func (d Decimal) Float(shift int) float64 {
	f, err := strconv.ParseFloat(d.mantissa.String()+"e-"+strconv.Itoa(d.frac+shift), 64)
	if err != nil { // cannot happen for a valid mantissa; a huge exponent underflows to 0 without error
		return 0
	}
	return f
}

// FormatScaled writes v / 10^digits as a plain decimal with trailing zeros removed
// (FormatScaled(1500, 3) = "1.5").
func FormatScaled(v int64, digits int) string {
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
