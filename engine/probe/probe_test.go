package probe

import (
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/policy"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

func TestParseSite(t *testing.T) {
	good := map[string]string{
		"example.org":                    "https://example.org/",
		"Example.ORG.":                   "https://example.org/",
		"http://example.org":             "http://example.org/",
		"HTTPS://example.org:8443/a?b=1": "https://example.org:8443/a?b=1",
		"example.org:8443/x%20y":         "https://example.org:8443/x%20y",
		"192.0.2.7":                      "https://192.0.2.7/",
		"http://[2001:db8::1]:8080/":     "http://[2001:db8::1]:8080/",
		"[::ffff:10.77.1.1]":             "https://10.77.1.1/",
		"  h2.wirelab.test  ":            "https://h2.wirelab.test/",
		"_dmarc-like.example.org":        "https://_dmarc-like.example.org/",
	}
	for in, want := range good {
		s, err := ParseSite("sites[0]", in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if s.URL.String() != want {
			t.Errorf("%q: %s, want %s", in, s.URL, want)
		}
	}
	bad := map[string]string{
		"":                           "must be a site",
		"ftp://example.org/":         `scheme "ftp"`,
		"mailto:me@example.org":      `scheme "mailto"`,
		"javascript:alert(1)":        `scheme "javascript"`,
		"ws://example.org":           `scheme "ws"`,
		"https://":                   "has no host",
		"https://user@example.org":   "user information",
		"https://exa mple.org":       "spaces",
		"https://example.org:0/":     "port",
		"https://example.org:99999/": "port",
		"https://-bad-.org/":         "not a valid host name",
		"https://a..b/":              "not a valid host name",
		"https://ex%41mple.org/":     "valid URL",
		"http://[fe80::1%25eth0]/":   "zone",
		"https://example.org/%zz":    "valid URL",
		strings.Repeat("a", 3000):    "longer than",
	}
	for in, want := range bad {
		_, err := ParseSite("sites[0]", in)
		fe, ok := fielderr.As(err)
		if !ok || !strings.Contains(err.Error(), want) || fe.Field != "sites[0]" || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v; want a one-line error of sites[0] containing %q", in, err, want)
		}
	}
}

// endless yields lines of a site list forever, counting what was read.
type endless struct{ lines, read int }

func (e *endless) Read(p []byte) (int, error) {
	line := "site" + strings.Repeat("x", 10) + ".example.org\n"
	n := 0
	for n+len(line) <= len(p) {
		n += copy(p[n:], line)
		e.lines++
	}
	e.read += n
	return n, nil
}

func TestReadList(t *testing.T) {
	sites, err := ReadList(strings.NewReader("# top sites\n\nexample.org\n  http://example.net/x \n# end\n"), "l.txt", 10)
	if err != nil || len(sites) != 2 || sites[1].URL.String() != "http://example.net/x" {
		t.Fatalf("%v %v", sites, err)
	}
	// A list without end (10⁶ lines and more) is refused after max+1 sites, without reading on.
	e := &endless{}
	_, err = ReadList(e, "huge.txt", DefaultMaxSites)
	if err == nil || !strings.Contains(err.Error(), "more than 1000 sites") || e.lines > 2*DefaultMaxSites+1000 {
		t.Fatalf("endless list: %v after %d lines", err, e.lines)
	}
	for in, want := range map[string]string{
		"":                           "has no sites",
		"# only a comment\n\n":       "has no sites",
		"example.org\nftp://x.org\n": "line 2",
		strings.Repeat("b", 5000):    "line 1: is longer than",
	} {
		if _, err := ReadList(strings.NewReader(in), "l.txt", 10); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: %v; want %q", in, err, want)
		}
	}
	if _, err := ParseSites(make([]string, 11), 10); err == nil || !strings.Contains(err.Error(), "at most 10") {
		t.Errorf("too many arguments: %v", err)
	}
}

var _ io.Reader = (*endless)(nil)

func TestParseRateAndPacer(t *testing.T) {
	for in, want := range map[string]time.Duration{"2/s": 500 * time.Millisecond, "30/min": 2 * time.Second, "1/h": time.Hour, "100/s": 10 * time.Millisecond} {
		r, err := ParseRate(in)
		if err != nil || r.Interval() != want {
			t.Errorf("%s: %v %v", in, r.Interval(), err)
		}
	}
	for _, in := range []string{"", "0/s", "-1/s", "2", "2/d", "101/s", "x/s"} {
		if _, err := ParseRate(in); err == nil || !strings.HasPrefix(err.Error(), "rate:") {
			t.Errorf("%q: %v", in, err)
		}
	}
	// Virtual time: connections to one host are spaced by the interval, other hosts are not held.
	p := newPacer(500 * time.Millisecond)
	t0 := time.Unix(1000, 0)
	got := []time.Duration{
		p.reserve("a", t0).Sub(t0),
		p.reserve("a", t0).Sub(t0),
		p.reserve("b", t0).Sub(t0),
		p.reserve("a", t0.Add(100*time.Millisecond)).Sub(t0),
		p.reserve("a", t0.Add(5*time.Second)).Sub(t0),
	}
	want := []time.Duration{0, 500 * time.Millisecond, 0, time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("reservation %d at %v, want %v", i, got[i], want[i])
		}
	}
}

// A site is checked as an address when it is one, as a name otherwise (engine/policy has the
// policy's own tests).
func TestCheckSite(t *testing.T) {
	own := netip.MustParsePrefix("10.77.0.0/16")
	live := policy.Policy{Own: own.Contains}
	internet := policy.Policy{AllowInternet: true, Own: own.Contains}
	for _, c := range []struct {
		p    policy.Policy
		site string
		ok   bool
	}{
		{live, "h2.wirelab.test", true},
		{live, "https://h2.wirelab.test/x", true},
		{live, "example.org", false},
		{live, "10.77.1.1", true},
		{live, "93.184.215.14", false},
		{internet, "example.org", true},
		{internet, "10.1.2.3", false},
		{internet, "[::ffff:192.168.1.1]", false},
		{internet, "[2606:4700::1111]", true},
	} {
		x, err := ParseSite("s", c.site)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkSite(c.p, x); (err == nil) != c.ok {
			t.Errorf("allow-internet %v, %s: %v", c.p.AllowInternet, c.site, err)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	for field, mutate := range map[string]func(*Config){
		"timeout":      func(c *Config) { c.Timeout = time.Millisecond },
		"concurrency":  func(c *Config) { c.Concurrency = 65 },
		"max-duration": func(c *Config) { c.MaxDuration = 0 },
		"ports":        func(c *Config) { c.Ports.QUIC = 0 },
	} {
		c := DefaultConfig()
		mutate(&c)
		if err := c.Check(); err == nil || !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("%s: %v", field, err)
		}
	}
	if err := DefaultConfig().Check(); err != nil {
		t.Error(err)
	}
}
