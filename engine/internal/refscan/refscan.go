// Package refscan finds the sub-resource references of HTML documents and CSS stylesheets that a
// browser fetches while loading a page without running scripts. It is the one scanner behind the
// engine's page loader (client: what a flat load requests) and `pages mirror` (page: which files
// of a saved site become objects, and where their references are rewritten), so both agree on
// what a page references.
//
// HTML (in document order):
//   - link href with rel stylesheet, icon, preload, modulepreload or apple-touch-icon
//   - script src (not nomodule scripts, which module-capable browsers skip)
//   - img src, or the first srcset candidate when there is no src; in a picture, the first source
//     srcset without a media condition instead of the img
//   - iframe/frame src (documents), embed src, object data, input type=image src, video poster,
//     the legacy background attribute of body, table, td and th
//   - url() and @import in style elements and style attributes
//   - base href (Ref.Base: not fetched; the first one changes the base URL of what follows)
//
// CSS: url(…) tokens and @import strings, outside comments and other strings.
//
// It is a scanner, not a resolver: it returns the reference text (Ref.URL, with HTML character
// references and CSS escapes decoded) and where it lies in the input (Ref.Offset, Ref.Length: the
// bytes a rewriter replaces), and leaves resolution against a base to the caller.
package refscan

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
)

// Kind is what the referencing element loads, with page.Type's names ("" when it does not say:
// every CSS reference, url() and @import alike).
type Kind string

// Kinds (the values of page.Type).
const (
	HTML  Kind = "html"
	CSS   Kind = "css"
	JS    Kind = "js"
	Image Kind = "image"
	Font  Kind = "font"
	Other Kind = "other"
)

// Ref is one reference.
type Ref struct {
	URL    string // the reference as the document means it (entities and CSS escapes decoded)
	Offset int    // byte offset of the reference's text in the input; -1 when it has no exact span
	Length int    // length of that text in the input (0 when Offset is -1)
	Kind   Kind   // what the element loads; HTML for frames (documents parsed in turn)
	Base   bool   // a base href: not fetched; the first one is the base URL of what follows
}

// Spanned reports whether the reference has an exact span in the input (a rewriter can replace it).
func (r Ref) Spanned() bool { return r.Offset >= 0 }

// HTMLRefs lists the references of an HTML document in document order.
func HTMLRefs(doc []byte) []Ref {
	var out []Ref
	z := html.NewTokenizer(bytes.NewReader(doc))
	off := 0
	inStyle, inPicture, pictureChosen := false, false, false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		raw := z.Raw()
		start := off
		off += len(raw)
		switch tt {
		case html.TextToken:
			if inStyle { // raw text: the bytes are the CSS
				out = append(out, cssRefs(raw, start)...)
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "style":
				inStyle = false
			case "picture":
				inPicture = false
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			tag := string(name)
			var attrs []attr
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				attrs = append(attrs, attr{key: string(k), val: string(v)})
			}
			spans := attrSpans(raw, len(tag))
			t := tagAttrs{attrs: attrs, spans: spans, raw: raw, start: start}
			add := func(key string, kind Kind) {
				if r, ok := t.ref(key, kind); ok {
					out = append(out, r)
				}
			}
			switch tag {
			case "base":
				if r, ok := t.ref("href", ""); ok {
					r.Base = true
					out = append(out, r)
				}
			case "link":
				rel, _ := t.get("rel")
				if linkFetched(rel) {
					as, _ := t.get("as")
					add("href", linkKind(rel, as))
				}
			case "script":
				if _, nomodule := t.get("nomodule"); !nomodule {
					add("src", JS)
				}
			case "picture":
				inPicture, pictureChosen = tt == html.StartTagToken, false
			case "source":
				_, media := t.get("media")
				if srcset, _ := t.get("srcset"); inPicture && !pictureChosen && !media && strings.TrimSpace(srcset) != "" {
					if r, ok := t.srcsetRef(); ok {
						out = append(out, r)
					}
					pictureChosen = true
				}
			case "img":
				if inPicture && pictureChosen {
					break
				}
				if src, _ := t.get("src"); strings.TrimSpace(src) != "" {
					add("src", Image)
				} else if r, ok := t.srcsetRef(); ok {
					out = append(out, r)
				}
			case "iframe", "frame":
				add("src", HTML)
			case "embed":
				add("src", Other)
			case "object":
				add("data", Other)
			case "input":
				if typ, _ := t.get("type"); strings.EqualFold(typ, "image") {
					add("src", Image)
				}
			case "video":
				add("poster", Image)
			case "style":
				inStyle = tt == html.StartTagToken
			}
			if tag == "body" || tag == "table" || tag == "td" || tag == "th" {
				add("background", Image)
			}
			if i := t.index("style"); i >= 0 {
				out = append(out, t.styleRefs(i)...)
			}
		}
	}
}

// CSSRefs lists the url() and @import references of a stylesheet in order.
func CSSRefs(css []byte) []Ref { return cssRefs(css, 0) }

type attr struct{ key, val string }

// span is where an attribute's value lies in a raw tag (off < 0: no value, or not found).
type span struct {
	key      string
	off, end int
}

type tagAttrs struct {
	attrs []attr
	spans []span // from attrSpans; used only when they agree with attrs
	raw   []byte
	start int
}

// index is the first attribute named key (the tokenizer keeps duplicates; browsers use the first).
func (t tagAttrs) index(key string) int {
	for i, a := range t.attrs {
		if a.key == key {
			return i
		}
	}
	return -1
}

func (t tagAttrs) get(key string) (string, bool) {
	if i := t.index(key); i >= 0 {
		return t.attrs[i].val, true
	}
	return "", false
}

// valueSpan is the span of attribute i's value in the raw tag when the raw lexer agrees with the
// tokenizer about it (same name, and the raw value decodes to the tokenizer's value).
func (t tagAttrs) valueSpan(i int) (off, end int, ok bool) {
	if len(t.spans) != len(t.attrs) {
		return 0, 0, false
	}
	s := t.spans[i]
	if s.off < 0 || s.key != t.attrs[i].key || html.UnescapeString(string(t.raw[s.off:s.end])) != t.attrs[i].val {
		return 0, 0, false
	}
	return s.off, s.end, true
}

// ref is the reference in attribute key, trimmed of the spaces a URL attribute ignores.
func (t tagAttrs) ref(key string, kind Kind) (Ref, bool) {
	i := t.index(key)
	if i < 0 || strings.TrimSpace(t.attrs[i].val) == "" {
		return Ref{}, false
	}
	r := Ref{URL: strings.TrimSpace(t.attrs[i].val), Offset: -1, Kind: kind}
	if off, end, ok := t.valueSpan(i); ok {
		v := t.raw[off:end]
		lead := len(v) - len(bytes.TrimLeft(v, spaceChars))
		trail := len(v) - len(bytes.TrimRight(v, spaceChars))
		if lead+trail < len(v) {
			r.Offset, r.Length = t.start+off+lead, len(v)-lead-trail
		}
	}
	return r, true
}

// srcsetRef is the first image candidate of the srcset attribute.
func (t tagAttrs) srcsetRef() (Ref, bool) {
	i := t.index("srcset")
	if i < 0 {
		return Ref{}, false
	}
	u := FirstSrcsetURL(t.attrs[i].val)
	if u == "" {
		return Ref{}, false
	}
	r := Ref{URL: u, Offset: -1, Kind: Image}
	if off, end, ok := t.valueSpan(i); ok {
		v := string(t.raw[off:end])
		first := FirstSrcsetURL(v) // entities hold no spaces or commas: the same candidate, raw
		lead := len(v) - len(strings.TrimLeft(v, spaceChars+","))
		if html.UnescapeString(first) == u {
			r.Offset, r.Length = t.start+off+lead, len(first)
		}
	}
	return r, true
}

// styleRefs are the references of style attribute i: with spans when its raw value holds no
// character reference (then the raw bytes are the CSS), without them otherwise.
func (t tagAttrs) styleRefs(i int) []Ref {
	if off, end, ok := t.valueSpan(i); ok && !bytes.ContainsRune(t.raw[off:end], '&') {
		return cssRefs(t.raw[off:end], t.start+off)
	}
	refs := cssRefs([]byte(t.attrs[i].val), 0)
	for k := range refs {
		refs[k].Offset, refs[k].Length = -1, 0
	}
	return refs
}

const spaceChars = " \t\n\r\f"

// attrSpans lexes the attributes of a raw start tag (after "<" and the tag name of nameLen bytes)
// with the tokenizer's rules (HTML's attribute name, before-value and value states) and returns
// each attribute's name (lower-cased) and value span.
func attrSpans(raw []byte, nameLen int) []span {
	var out []span
	n := len(raw)
	i := 1 + nameLen
	if i > n {
		return nil
	}
	for i < n {
		for i < n && (isSpace(raw[i]) || raw[i] == '/') {
			i++
		}
		if i >= n || raw[i] == '>' {
			break
		}
		ks := i
		i++ // the first character of a name may be '='
		for i < n && !isSpace(raw[i]) && raw[i] != '/' && raw[i] != '>' && raw[i] != '=' {
			i++
		}
		key := strings.ToLower(string(raw[ks:i]))
		j := i
		for j < n && isSpace(raw[j]) {
			j++
		}
		if j >= n || raw[j] != '=' {
			out = append(out, span{key: key, off: -1})
			i = j
			continue
		}
		j++
		for j < n && isSpace(raw[j]) {
			j++
		}
		if j >= n || raw[j] == '>' {
			out = append(out, span{key: key, off: j, end: j})
			i = j
			continue
		}
		if q := raw[j]; q == '"' || q == '\'' {
			e := bytes.IndexByte(raw[j+1:], q)
			if e < 0 {
				return out // unterminated: the tokenizer drops such a tag
			}
			out = append(out, span{key: key, off: j + 1, end: j + 1 + e})
			i = j + 1 + e + 1
			continue
		}
		e := j
		for e < n && !isSpace(raw[e]) && raw[e] != '>' {
			e++
		}
		out = append(out, span{key: key, off: j, end: e})
		i = e
	}
	return out
}

// linkKind is the kind of what a fetched link element loads (its rel, and as for preloads).
func linkKind(rel, as string) Kind {
	for _, t := range strings.Fields(strings.ToLower(rel)) {
		switch t {
		case "stylesheet":
			return CSS
		case "icon", "apple-touch-icon":
			return Image
		case "modulepreload":
			return JS
		}
	}
	switch strings.ToLower(as) {
	case "style":
		return CSS
	case "script":
		return JS
	case "font":
		return Font
	case "image":
		return Image
	}
	return Other
}

// linkFetched reports whether a link element with this rel is fetched while loading the page.
func linkFetched(rel string) bool {
	for _, t := range strings.Fields(strings.ToLower(rel)) {
		switch t {
		case "stylesheet", "icon", "preload", "modulepreload", "apple-touch-icon":
			return true
		}
	}
	return false
}

// FirstSrcsetURL returns the URL of a srcset's first image candidate (HTML's srcset grammar:
// candidates separated by commas, each a URL followed by optional descriptors).
func FirstSrcsetURL(srcset string) string {
	s := strings.TrimLeft(srcset, spaceChars+",")
	end := strings.IndexAny(s, spaceChars)
	if end < 0 {
		end = len(s)
	}
	return strings.TrimRight(s[:end], ",")
}

// cssRefs scans CSS for url(…) tokens and @import strings, skipping comments and other strings;
// offsets are relative to css, plus base.
func cssRefs(css []byte, base int) []Ref {
	var out []Ref
	n := len(css)
	for i := 0; i < n; {
		c := css[i]
		switch {
		case c == '/' && i+1 < n && css[i+1] == '*':
			end := bytes.Index(css[i+2:], []byte("*/"))
			if end < 0 {
				return out
			}
			i += 2 + end + 2
		case c == '"' || c == '\'':
			_, _, _, i = cssString(css, i)
		case c == '\\':
			i += 2
		case hasPrefixFold(css[i:], "url(") && (i == 0 || !isIdentByte(css[i-1])):
			var r Ref
			r, i = cssURLBody(css, i+4)
			out = append(out, r.at(base))
		case hasPrefixFold(css[i:], "@import"):
			i += len("@import")
			for i < n && isSpace(css[i]) {
				i++
			}
			if i < n && (css[i] == '"' || css[i] == '\'') {
				u, s, e, next := cssString(css, i)
				out = append(out, Ref{URL: u, Offset: s, Length: e - s}.at(base))
				i = next
			}
		default:
			i++
		}
	}
	return out
}

func (r Ref) at(base int) Ref {
	if r.Offset >= 0 {
		r.Offset += base
	}
	return r
}

// cssString reads a quoted string starting at css[i] (the quote); it returns its decoded contents,
// the span of its raw contents and the index after the closing quote (or the end of the line or
// input for an unterminated string).
func cssString(css []byte, i int) (val string, start, end, next int) {
	q := css[i]
	var b strings.Builder
	start = i + 1
	for i++; i < len(css); i++ {
		switch c := css[i]; {
		case c == q:
			return b.String(), start, i, i + 1
		case c == '\\' && i+1 < len(css):
			i++
			if css[i] != '\n' {
				b.WriteByte(css[i])
			}
		case c == '\n':
			return b.String(), start, i, i
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), start, len(css), len(css)
}

// cssURLBody reads the argument of url( starting after the parenthesis; it returns the reference
// (span relative to css) and the index after the closing parenthesis.
func cssURLBody(css []byte, i int) (Ref, int) {
	n := len(css)
	for i < n && isSpace(css[i]) {
		i++
	}
	var r Ref
	if i < n && (css[i] == '"' || css[i] == '\'') {
		var s, e int
		r.URL, s, e, i = cssString(css, i)
		r.Offset, r.Length = s, e-s
	} else {
		start := i
		for i < n && css[i] != ')' && !isSpace(css[i]) {
			i++
		}
		r.URL, r.Offset, r.Length = string(css[start:i]), start, i-start
	}
	for i < n && css[i] != ')' {
		i++
	}
	if i < n {
		i++
	}
	return r, i
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

func isIdentByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
