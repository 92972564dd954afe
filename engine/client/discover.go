package client

import (
	"bytes"
	"net/url"
	"strings"

	"golang.org/x/net/html"

	"github.com/wirelab/wirelab/engine/page"
)

// ref is a sub-resource reference found in a document or stylesheet.
type ref struct {
	url   *url.URL
	frame bool      // an iframe/frame document: parsed in turn when it is HTML
	kind  page.Type // what the referencing element loads ("" when it does not say: CSS url())
}

// discoverHTML lists, in document order, the sub-resources a browser would fetch for an HTML
// document without running scripts:
//
//   - link href with rel stylesheet, icon, preload, modulepreload or apple-touch-icon
//   - script src (not nomodule scripts, which module-capable browsers skip)
//   - img src, or the first srcset candidate when there is no src; in a picture, the first source
//     srcset without a media condition instead of the img
//   - iframe/frame src (documents), embed src, object data, input type=image src, video poster,
//     the legacy background attribute
//   - url() and @import in style elements and style attributes
//
// A base href changes the base URL. data:, javascript:, fragment-only and non-http(s) references
// are skipped; fragments are removed. Duplicates are left to the caller.
func discoverHTML(body []byte, base *url.URL) []ref {
	var out []ref
	add := func(raw string, b *url.URL, kind page.Type) {
		if u := resolveRef(raw, b); u != nil {
			out = append(out, ref{url: u, frame: kind == page.TypeHTML, kind: kind})
		}
	}
	addCSS := func(css []byte) {
		for _, raw := range cssURLs(css) {
			add(raw, base, "")
		}
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	baseSet, inStyle := false, false
	inPicture, pictureChosen := false, false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.TextToken:
			if inStyle {
				addCSS(z.Text())
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
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if _, dup := attrs[string(k)]; !dup {
					attrs[string(k)] = string(v)
				}
			}
			tag := string(name)
			switch tag {
			case "base":
				if href, ok := attrs["href"]; ok && !baseSet {
					if u := resolveRef(href, base); u != nil {
						base, baseSet = u, true
					}
				}
			case "link":
				if linkFetched(attrs["rel"]) {
					add(attrs["href"], base, linkKind(attrs["rel"], attrs["as"]))
				}
			case "script":
				if _, nomodule := attrs["nomodule"]; !nomodule {
					add(attrs["src"], base, page.TypeJS)
				}
			case "picture":
				inPicture, pictureChosen = true, false
			case "source":
				if _, media := attrs["media"]; inPicture && !pictureChosen && !media && attrs["srcset"] != "" {
					add(firstSrcsetURL(attrs["srcset"]), base, page.TypeImage)
					pictureChosen = true
				}
			case "img":
				if inPicture && pictureChosen {
					break
				}
				if src := attrs["src"]; strings.TrimSpace(src) != "" {
					add(src, base, page.TypeImage)
				} else {
					add(firstSrcsetURL(attrs["srcset"]), base, page.TypeImage)
				}
			case "iframe", "frame":
				add(attrs["src"], base, page.TypeHTML)
			case "embed":
				add(attrs["src"], base, page.TypeOther)
			case "object":
				add(attrs["data"], base, page.TypeOther)
			case "input":
				if strings.EqualFold(attrs["type"], "image") {
					add(attrs["src"], base, page.TypeImage)
				}
			case "video":
				add(attrs["poster"], base, page.TypeImage)
			case "style":
				inStyle = true
			}
			if bg, ok := attrs["background"]; ok && (tag == "body" || tag == "table" || tag == "td" || tag == "th") {
				add(bg, base, page.TypeImage)
			}
			if style, ok := attrs["style"]; ok {
				addCSS([]byte(style))
			}
		}
	}
}

// linkKind is the type of what a fetched link element loads (its rel, and as for preloads).
func linkKind(rel, as string) page.Type {
	for _, t := range strings.Fields(strings.ToLower(rel)) {
		switch t {
		case "stylesheet":
			return page.TypeCSS
		case "icon", "apple-touch-icon":
			return page.TypeImage
		case "modulepreload":
			return page.TypeJS
		}
	}
	switch strings.ToLower(as) {
	case "style":
		return page.TypeCSS
	case "script":
		return page.TypeJS
	case "font":
		return page.TypeFont
	case "image":
		return page.TypeImage
	}
	return page.TypeOther
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

// firstSrcsetURL returns the URL of a srcset's first image candidate (HTML's srcset grammar:
// candidates separated by commas, each a URL followed by optional descriptors).
func firstSrcsetURL(srcset string) string {
	s := strings.TrimLeft(srcset, " \t\n\r\f,")
	end := strings.IndexAny(s, " \t\n\r\f")
	if end < 0 {
		end = len(s)
	}
	return strings.TrimRight(s[:end], ",")
}

// discoverCSS lists the url() and @import references of a stylesheet, resolved against its URL.
func discoverCSS(body []byte, base *url.URL) []ref {
	var out []ref
	for _, raw := range cssURLs(body) {
		if u := resolveRef(raw, base); u != nil {
			out = append(out, ref{url: u})
		}
	}
	return out
}

// cssURLs scans CSS for url(…) tokens and @import strings, skipping comments and other strings.
// It is a scanner, not a parser: enough for the references a browser fetches.
func cssURLs(css []byte) []string {
	var out []string
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
			_, i = cssString(css, i)
		case c == '\\':
			i += 2
		case hasPrefixFold(css[i:], "url(") && (i == 0 || !isIdentByte(css[i-1])):
			var u string
			u, i = cssURLBody(css, i+4)
			out = append(out, u)
		case hasPrefixFold(css[i:], "@import"):
			i += len("@import")
			for i < n && isCSSSpace(css[i]) {
				i++
			}
			if i < n && (css[i] == '"' || css[i] == '\'') {
				var u string
				u, i = cssString(css, i)
				out = append(out, u)
			}
		default:
			i++
		}
	}
	return out
}

// cssString reads a quoted string starting at css[i] (the quote); it returns its contents and the
// index after the closing quote (or the end of the line/input for an unterminated string).
func cssString(css []byte, i int) (string, int) {
	q := css[i]
	var b strings.Builder
	for i++; i < len(css); i++ {
		switch c := css[i]; {
		case c == q:
			return b.String(), i + 1
		case c == '\\' && i+1 < len(css):
			i++
			if css[i] != '\n' {
				b.WriteByte(css[i])
			}
		case c == '\n':
			return b.String(), i
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), len(css)
}

// cssURLBody reads the argument of url( starting after the parenthesis; it returns the URL and the
// index after the closing parenthesis.
func cssURLBody(css []byte, i int) (string, int) {
	n := len(css)
	for i < n && isCSSSpace(css[i]) {
		i++
	}
	var u string
	if i < n && (css[i] == '"' || css[i] == '\'') {
		u, i = cssString(css, i)
	} else {
		start := i
		for i < n && css[i] != ')' && !isCSSSpace(css[i]) {
			i++
		}
		u = string(css[start:i])
	}
	for i < n && css[i] != ')' {
		i++
	}
	if i < n {
		i++
	}
	return u, i
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

func isIdentByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func isCSSSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// resolveRef resolves a reference against base; nil for what a page load does not fetch.
func resolveRef(raw string, base *url.URL) *url.URL {
	raw = strings.TrimSpace(raw)
	if raw == "" || raw[0] == '#' {
		return nil
	}
	u, err := base.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil
	}
	u.Fragment, u.RawFragment = "", ""
	return u
}
