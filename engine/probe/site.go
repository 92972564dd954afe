package probe

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

// Site is one target of a probe.
type Site struct {
	Input string   // as given
	URL   *url.URL // normalised: scheme http or https, lower-case host, path at least "/"
	Host  string   // host name (lower case, no final dot) or IP address
	Addr  netip.Addr
	// Port is the URL's explicit port (0: none). It replaces the default port of its scheme's
	// steps: https → TLS (and the QUIC default), http → cleartext.
	Port int
}

// Limits of site lists.
const (
	// DefaultMaxSites bounds a list unless --max-sites says otherwise.
	DefaultMaxSites = 1000
	// MaxSites is the largest --max-sites.
	MaxSites = 100_000
	// MaxLineBytes bounds one line of a site list (and one site).
	MaxLineBytes = 2048
)

// IsIP reports whether the site is given by address rather than by name.
func (s Site) IsIP() bool { return s.Addr.IsValid() }

// ParseSite parses one site: a URL with scheme http or https, or a bare host[:port][/path] (then
// https). field names the input in errors (e.g. "sites[2]" or "list line 7").
func ParseSite(field, s string) (Site, error) {
	in := strings.TrimSpace(s)
	bad := func(format string, args ...any) (Site, error) {
		return Site{}, fielderr.New(field, in, format, args...)
	}
	if in == "" {
		return bad("must be a site: a host name or an http(s):// URL")
	}
	if len(in) > MaxLineBytes {
		return Site{}, fielderr.New(field, in[:40]+"…", "is longer than %d bytes", MaxLineBytes)
	}
	for _, r := range in {
		if r < 0x21 || r == 0x7f {
			return bad("must be a URL without spaces or control characters")
		}
	}
	raw := in
	if i := strings.Index(raw, "://"); i < 0 {
		if strings.Contains(strings.SplitN(raw, "/", 2)[0], ":") && !strings.HasPrefix(raw, "[") {
			// "mailto:x" or "ftp:host" — a scheme without "//", unless it is host:port.
			scheme, rest, _ := strings.Cut(raw, ":")
			if _, err := strconv.Atoi(strings.SplitN(rest, "/", 2)[0]); err != nil {
				return bad("scheme %q is not http or https; give http://… or https://… (or a bare host)", strings.ToLower(scheme))
			}
		}
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return bad("must be a valid URL (%v)", err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return bad("scheme %q is not http or https; a probe speaks HTTP only", u.Scheme)
	}
	if u.User != nil {
		return bad("must not carry user information (user@host)")
	}
	if u.Opaque != "" {
		return bad("must be a URL of the form %s://host/path", u.Scheme)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return bad("has no host")
	}
	site := Site{Input: in, Host: host}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return bad("must not carry an IPv6 zone")
		}
		site.Addr = a.Unmap()
		site.Host = site.Addr.String()
	} else if !validHostName(host) {
		return bad("host %q is not a valid host name (letters, digits, hyphens; labels of 1–63; at most 253)", host)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return bad("port %q must be 1–65535", p)
		}
		site.Port = n
	}
	hostport := site.Host
	if site.Addr.Is6() {
		hostport = "[" + hostport + "]"
	}
	if site.Port != 0 {
		hostport = net.JoinHostPort(site.Host, strconv.Itoa(site.Port))
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	norm := &url.URL{Scheme: u.Scheme, Host: hostport, RawQuery: u.RawQuery}
	if norm.Path, err = url.PathUnescape(path); err != nil {
		return bad("has an invalid path escape")
	}
	norm.RawPath = path
	site.URL = norm
	return site, nil
}

// validHostName: LDH labels (underscores too, as some real names have them), 1–63 bytes each,
// at most 253 in all, at least one dot or a single label.
func validHostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// ParseSites parses sites given on the command line (field "sites[i]").
func ParseSites(args []string, max int) ([]Site, error) {
	if len(args) > max {
		return nil, fielderr.New("sites", len(args), "at most %d sites (--max-sites); split the list or raise the limit (at most %d)", max, MaxSites)
	}
	out := make([]Site, 0, len(args))
	for i, a := range args {
		s, err := ParseSite(fmt.Sprintf("sites[%d]", i), a)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ReadList reads a site list: one site a line; blank lines and lines starting with # are skipped.
// It stops reading as soon as the list has more than max sites, or at a line longer than
// MaxLineBytes. name is the list's name in errors.
func ReadList(r io.Reader, name string, max int) ([]Site, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes+1)
	var out []Site
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if len(out) == max {
			return nil, fielderr.New("list", name, "has more than %d sites (--max-sites); split it or raise the limit (at most %d)", max, MaxSites)
		}
		s, err := ParseSite(fmt.Sprintf("list %s line %d", name, line), text)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fielderr.New(fmt.Sprintf("list %s line %d", name, line+1), nil, "is longer than %d bytes; one site a line", MaxLineBytes)
		}
		return nil, fmt.Errorf("list %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fielderr.New("list", name, "has no sites (one a line; # starts a comment)")
	}
	return out, nil
}
