package page

// The default cache policy of a page's objects, by type, as real sites set it: the document is
// revalidated on every view (no-cache), subresources whose URLs are versioned are kept a year.
// Every object URL in the lab is versioned (/L/<token>/…: a new load is a new URL), so the
// subresources are what a site's fingerprinted static assets are. Sources: web.dev "Prevent
// unnecessary network requests with the HTTP Cache" (versioned URLs: max-age=31536000;
// unversioned HTML: no-cache) and the HTTP Archive Web Almanac 2022, HTTP chapter "Caching"
// (max-age the most used directive; a year the most common value for scripts, styles, fonts and
// images). docs/pages.md, "Cache headers", is the user's copy of this table.
const (
	// CacheDocument is the Cache-Control of an HTML document (and of type other: XHR/JSON
	// answers are not versioned assets).
	CacheDocument = "no-cache"
	// CacheStatic is the Cache-Control of a style sheet, script, image or font.
	CacheStatic = "max-age=31536000"
	// CacheNone is the Cache-Control of an answer that is not a page object (404, 405).
	CacheNone = "no-store"
)

// CacheControlFor is the default Cache-Control of an object of type t.
func CacheControlFor(t Type) string {
	switch t {
	case TypeCSS, TypeJS, TypeImage, TypeFont:
		return CacheStatic
	}
	return CacheDocument
}

// CachePolicy is the Cache-Control every server under test sends with o: its own cache_control,
// or the default policy by type.
func (o *Object) CachePolicy() string {
	if o.CacheControl != "" {
		return o.CacheControl
	}
	return CacheControlFor(o.Type)
}
