package loadgen

import (
	"strings"
	"testing"
)

// ParseRunServer is the one check of a cluster run's server address (loadtest --serve, a serving
// line's addr, loadgen --run-server): IPv4 unicast, not loopback, special-purpose only if private.
func TestParseRunServer(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.5":        "",
		"::ffff:10.0.0.5": "", // unmapped
		"93.184.215.14":   "",
		"127.0.0.1":       "want the IPv4 unicast address",
		"0.0.0.0":         "want the IPv4 unicast address",
		"224.0.0.1":       "want the IPv4 unicast address",
		"2001:db8::1":     "want the IPv4 unicast address",
		"169.254.169.254": "a special-purpose address (link-local)",
		"100.64.0.1":      "a special-purpose address (shared address space)",
		"ten":             `ParseAddr("ten")`,
	} {
		a, err := ParseRunServer(in)
		switch {
		case want == "" && (err != nil || a.String() != strings.TrimPrefix(in, "::ffff:")):
			t.Errorf("%s: %v, %v; want it unmapped", in, a, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v; want %q", in, err, want)
		}
	}
}
