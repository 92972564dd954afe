package page

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The URL scheme. Every load picks a token; all of its URLs live below /L/<token>/ so that no
// two loads share a URL (nothing is served from a cache). The server accepts any valid token and
// serves the same objects under it:
//
//	root:    <scheme>://s1.wirelab.test[:port]/L/<token>/   (also …/L/<token>/index.html, the root's path)
//	objects: <scheme>://sN.wirelab.test[:port]/L/<token><path>
const (
	// LoadPrefix starts every served path.
	LoadPrefix = "/L/"
	// MaxTokenLen is the longest load token; generated HTML and CSS leave room for it.
	MaxTokenLen = 32
	// worstPort is the longest port the generated HTML and CSS leave room for.
	worstPort = 65535
)

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ValidToken checks a load token: 1–32 characters of [A-Za-z0-9_-].
func ValidToken(token string) error {
	if !tokenRE.MatchString(token) {
		return fieldErr("token", token, "must be 1–%d characters of [A-Za-z0-9_-]", MaxTokenLen)
	}
	return nil
}

// NewToken returns a fresh random token (16 hex digits).
func NewToken() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

// Scheme is the scheme of a load's URLs over a protocol of the contract: http for the cleartext
// ones (h1, h2c), https for the others.
func Scheme(protocol string) string {
	if protocol == "h1" || protocol == "h2c" {
		return "http"
	}
	return "https"
}

// Base is what a load's URLs are built from.
type Base struct {
	Scheme string // "http" or "https"
	Port   int    // 0 or the scheme's default port: no port in the URL
	Token  string // the load token
	// Host, when set, replaces every origin's host name in the URLs (a page served under another
	// name: the local internet's sites serve theirs under their own).
	Host string
}

func (b Base) validate() error {
	if b.Scheme != "http" && b.Scheme != "https" {
		return fieldErr("scheme", b.Scheme, "must be http or https")
	}
	if b.Port < 0 || b.Port > 65535 {
		return fieldErr("port", b.Port, "must be 0–65535")
	}
	if b.Host != "" && !ValidHost(b.Host) {
		return fieldErr("host", b.Host, "must be a host name (letters, digits, - and . only)")
	}
	return ValidToken(b.Token)
}

// ValidHost reports whether h is a plain DNS host name: 1–253 characters of letters, digits, '-'
// and '.', no empty label.
func ValidHost(h string) bool {
	if h == "" || len(h) > 253 || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, "..") {
		return false
	}
	for _, c := range h {
		if !(c == '-' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			return false
		}
	}
	return true
}

// hostPort renders host[:port], leaving out the scheme's default port.
func (b Base) hostPort(host string) string {
	if b.Port == 0 || (b.Scheme == "http" && b.Port == 80) || (b.Scheme == "https" && b.Port == 443) {
		return host
	}
	return host + ":" + strconv.Itoa(b.Port)
}

// objectURL is the URL of object i on host.
func (b Base) objectURL(host, path string) string {
	if b.Host != "" {
		host = b.Host
	}
	return b.Scheme + "://" + b.hostPort(host) + LoadPrefix + b.Token + path
}

// URL returns the URL of object i for base b; the root (i = 0) is …/L/<token>/.
func (p *Page) URL(i int, b Base) (string, error) {
	if err := b.validate(); err != nil {
		return "", err
	}
	if i < 0 || i >= len(p.Objects) {
		return "", fmt.Errorf("page: object index %d out of range [0, %d)", i, len(p.Objects))
	}
	o := p.Objects[i]
	if i == 0 {
		return b.objectURL(p.Origins[o.Origin].Host, "/"), nil
	}
	return b.objectURL(p.Origins[o.Origin].Host, o.Path), nil
}

// URLs returns the URL of every object for a load with this token, over scheme (http or https)
// on the scheme's default port, in object order (the root first).
func (p *Page) URLs(token, scheme string) ([]string, error) {
	return p.URLsAt(Base{Scheme: scheme, Token: token})
}

// URLsAt is URLs with an explicit port (tests on loopback use ephemeral ports).
func (p *Page) URLsAt(b Base) ([]string, error) {
	out := make([]string, len(p.Objects))
	for i := range p.Objects {
		u, err := p.URL(i, b)
		if err != nil {
			return nil, err
		}
		out[i] = u
	}
	return out, nil
}

// SplitPath splits a request path /L/<token>/<rest> into the token and the object path "/<rest>".
// The root is requested as /L/<token>/ (object path "/"); callers map "/" to the root object.
func SplitPath(urlPath string) (token, objectPath string, ok bool) {
	rest, found := strings.CutPrefix(urlPath, LoadPrefix)
	if !found {
		return "", "", false
	}
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return "", "", false
	}
	token, objectPath = rest[:slash], rest[slash:]
	if ValidToken(token) != nil {
		return "", "", false
	}
	return token, objectPath, true
}
