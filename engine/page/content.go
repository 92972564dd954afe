package page

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"html"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"strings"
)

// Content generation. Every body is a deterministic function of the page seed, the object id and
// (for the root HTML and CSS, which embed URLs) the load's Base. Filler comes from a ChaCha8
// keystream seeded with sha256(seed, object id), so it is incompressible (random bytes, or random
// characters from a 64-character alphabet inside HTML/CSS/JS comments) and every body has exactly
// the object's size. Bodies that embed no URL are byte-identical for every token, scheme and port;
// HTML and CSS differ only in the URLs they embed and keep their size.

// textAlphabet has 64 characters that can never close an HTML comment (no '-', '>', '<', '!') or a
// CSS/JS comment (no '*', '/').
const textAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._"

// Image templates: the smallest valid files the generator pads to the object's size.
var (
	pngTemplate  = encodeTemplate(func(w io.Writer, img image.Image) error { return png.Encode(w, img) })
	jpegTemplate = encodeTemplate(func(w io.Writer, img image.Image) error {
		return jpeg.Encode(w, img, &jpeg.Options{Quality: 75})
	})
)

func encodeTemplate(enc func(io.Writer, image.Image) error) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 0x33, G: 0x66, B: 0x99, A: 0xff})
	var b bytes.Buffer
	if err := enc(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// pngPadChunk is the type of the ancillary, private, safe-to-copy chunk that pads PNG images.
const pngPadChunk = "wlPd"

// MinPNGSize and MinJPEGSize are the smallest image sizes served as valid files; smaller image
// objects are served as random bytes.
var (
	MinPNGSize  = int64(len(pngTemplate) + 12)
	MinJPEGSize = int64(len(jpegTemplate))
)

// segment is one piece of a body: literal bytes, keystream filler, or the PNG CRC.
type segment struct {
	lit    []byte
	n      int64 // filler length (lit == nil && !crcOut)
	text   bool  // filler drawn from textAlphabet
	crcIn  bool  // bytes of this segment feed the running CRC
	crcOut bool  // emit the running CRC (big-endian, 4 bytes)
}

func (s segment) len() int64 {
	switch {
	case s.crcOut:
		return 4
	case s.lit != nil:
		return int64(len(s.lit))
	}
	return s.n
}

// Body streams one object's content. It implements io.Reader and io.WriterTo.
type Body struct {
	size int64
	segs []segment
	rng  *rand.ChaCha8
	crc  hash.Hash32
	cur  int   // current segment
	off  int64 // offset in the current segment
}

// Len is the body's total size in bytes.
func (b *Body) Len() int64 { return b.size }

func (b *Body) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if b.cur >= len(b.segs) {
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		s := &b.segs[b.cur]
		if s.crcOut && s.lit == nil {
			s.lit = binary.BigEndian.AppendUint32(nil, b.crc.Sum32())
		}
		rem := s.len() - b.off
		chunk := p[n:]
		if int64(len(chunk)) > rem {
			chunk = chunk[:rem]
		}
		if s.lit != nil {
			copy(chunk, s.lit[b.off:])
		} else {
			_, _ = b.rng.Read(chunk)
			if s.text {
				for i, c := range chunk {
					chunk[i] = textAlphabet[c&63]
				}
			}
		}
		if s.crcIn {
			b.crc.Write(chunk)
		}
		n += len(chunk)
		b.off += int64(len(chunk))
		if b.off == s.len() {
			b.cur++
			b.off = 0
		}
	}
	return n, nil
}

// WriteTo writes the whole (remaining) body to w.
func (b *Body) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, 32<<10)
	var total int64
	for {
		n, err := b.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// Bytes reads the whole body into memory (tests and small objects).
func (b *Body) Bytes() []byte {
	var buf bytes.Buffer
	buf.Grow(int(b.size))
	_, _ = b.WriteTo(&buf)
	return buf.Bytes()
}

// contentSeed derives the keystream key of one object.
func contentSeed(seed int64, objectID string) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "wirelab content v1\x00%d\x00%s", seed, objectID)
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

// Body returns the content of object i as served to a load with base b.
func (p *Page) Body(i int, b Base) (*Body, error) {
	if i < 0 || i >= len(p.Objects) {
		return nil, fmt.Errorf("page: object index %d out of range [0, %d)", i, len(p.Objects))
	}
	if err := b.validate(); err != nil {
		return nil, err
	}
	o := p.Objects[i]
	host := func(j int) string { return p.Origins[p.Objects[j].Origin].Host }
	var segs []segment
	switch {
	case o.File != "":
		var err error
		if segs, err = p.fileSegments(i, b, host); err != nil {
			return nil, err
		}
	case o.Type == TypeHTML:
		head, tail := p.htmlMarkup(i, b, host)
		segs = commentPadded(head, tail, o.Size, "<!--", "-->", ' ')
	case o.Type == TypeCSS:
		head := withLabel(o, p.cssRules(i, b, host))
		segs = commentPadded(head, nil, o.Size, "/*", "*/", ' ')
	case o.Type == TypeJS:
		segs = commentPadded(withLabel(o, nil), nil, o.Size, "/*", "*/", ';')
	case o.Type == TypeImage && isPNG(o.ContentType) && o.Size >= MinPNGSize:
		segs = pngSegments(o.Size)
	case o.Type == TypeImage && isJPEG(o.ContentType) && o.Size >= MinJPEGSize:
		segs = jpegSegments(o.Size)
	case o.Type == TypeFont && o.Size >= 4 && strings.Contains(o.ContentType, "woff2"):
		segs = []segment{{lit: []byte("wOF2")}, {n: o.Size - 4}}
	default:
		segs = []segment{{n: o.Size}}
	}
	body := &Body{size: o.Size, segs: segs, crc: crc32.NewIEEE()}
	key := contentSeed(p.Seed, o.ID)
	body.rng = rand.NewChaCha8(key)
	var total int64
	for _, s := range segs {
		total += s.len()
	}
	if total != o.Size {
		return nil, fmt.Errorf("page: object %s: generated %d bytes for size %d (size below MinSize?)", o.ID, total, o.Size)
	}
	return body, nil
}

// withLabel prefixes markup with a comment naming the object when both fit in its size.
func withLabel(o Object, markup []byte) []byte {
	label := "/* wirelab " + o.ID + " */\n"
	if int64(len(label)+len(markup)) > o.Size {
		return markup
	}
	return append([]byte(label), markup...)
}

func isPNG(ct string) bool  { return strings.HasPrefix(ct, "image/png") }
func isJPEG(ct string) bool { return strings.HasPrefix(ct, "image/jpeg") }

// commentPadded lays out head, a filler comment (open … close) and tail to exactly size bytes.
// When fewer bytes remain than an empty comment needs, the gap is padded with pad characters
// (whitespace or ';', valid in HTML, CSS and JS).
func commentPadded(head, tail []byte, size int64, open, close string, pad byte) []segment {
	fill := size - int64(len(head)) - int64(len(tail))
	if fill < 0 {
		return nil // too small for its markup: Body reports it (Validate prevents it)
	}
	segs := []segment{{lit: head}}
	if fill >= int64(len(open)+len(close)) {
		segs = append(segs, segment{lit: []byte(open)}, segment{n: fill - int64(len(open)+len(close)), text: true}, segment{lit: []byte(close)})
	} else if fill > 0 {
		segs = append(segs, segment{lit: bytes.Repeat([]byte{pad}, int(fill))})
	}
	return append(segs, segment{lit: tail})
}

// pngSegments: the template up to IEND, a padding chunk of random bytes, then IEND.
func pngSegments(size int64) []segment {
	iend := len(pngTemplate) - 12
	n := size - MinPNGSize
	return []segment{
		{lit: pngTemplate[:iend]},
		{lit: binary.BigEndian.AppendUint32(nil, uint32(n))},
		{lit: []byte(pngPadChunk), crcIn: true},
		{n: n, crcIn: true},
		{crcOut: true},
		{lit: pngTemplate[iend:]},
	}
}

// jpegSegments: SOI, COM segments of random bytes (each 4 to 65537 bytes), the rest of the
// template; 1–3 leftover bytes go after EOI, where decoders ignore them.
func jpegSegments(size int64) []segment {
	segs := []segment{{lit: jpegTemplate[:2]}}
	extra := size - MinJPEGSize
	var trailing int64
	if extra > 0 && extra < 4 {
		trailing, extra = extra, 0
	}
	if extra > 0 {
		const maxSeg = 65537 // 2 marker + 2 length + 65533 payload
		k := (extra + maxSeg - 1) / maxSeg
		q, r := extra/k, extra%k
		for s := int64(0); s < k; s++ {
			total := q
			if s < r {
				total++
			}
			segs = append(segs,
				segment{lit: []byte{0xFF, 0xFE, byte((total - 2) >> 8), byte(total - 2)}},
				segment{n: total - 4})
		}
	}
	segs = append(segs, segment{lit: jpegTemplate[2:]})
	if trailing > 0 {
		segs = append(segs, segment{n: trailing})
	}
	return segs
}

// EmbedsURLs reports whether object i's bytes hold other objects' URLs — and so depend on the
// load's base (scheme, port, token): the root HTML, a CSS that owns objects, a file-backed object
// with references. Every other object's bytes are the same for every load.
func (p *Page) EmbedsURLs(i int) bool {
	if i < 0 || i >= len(p.Objects) {
		return false
	}
	if p.Objects[i].File != "" {
		return len(p.Objects[i].Refs) > 0
	}
	return len(references(p, i)) > 0
}

// references returns the indexes of the objects whose URLs object i embeds: every other object
// for the root HTML, the objects a CSS owns (their parent is the CSS), nothing otherwise.
func references(p *Page, i int) []int {
	var refs []int
	switch {
	case i == 0:
		for j := 1; j < len(p.Objects); j++ {
			refs = append(refs, j)
		}
	case p.Objects[i].Type == TypeCSS:
		for j, o := range p.Objects {
			if j != i && o.Parent == p.Objects[i].ID {
				refs = append(refs, j)
			}
		}
	}
	return refs
}

// worstBase and worstHost give the longest URLs any load can produce, which bound the markup.
var worstBase = Base{Scheme: "https", Port: worstPort, Token: strings.Repeat("x", MaxTokenLen)}

func worstHost(int) string { return OriginHost(MaxOrigins - 1) }

// MinSize is the smallest size object i can have: the root HTML and CSS must hold their markup
// with the longest possible URLs; any other object needs one byte.
func MinSize(p *Page, i int) int64 {
	switch {
	case i == 0 || p.Objects[i].Type == TypeHTML:
		head, tail := p.htmlMarkup(i, worstBase, worstHost)
		return int64(len(head) + len(tail))
	case p.Objects[i].Type == TypeCSS:
		return int64(len(p.cssRules(i, worstBase, worstHost)))
	}
	return 1
}

// htmlMarkup renders an HTML document around its filler: head ends inside <body> after the
// references, tail closes the document. Non-root HTML documents reference nothing.
func (p *Page) htmlMarkup(i int, b Base, host func(int) string) (head, tail []byte) {
	var h strings.Builder
	h.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>")
	h.WriteString(html.EscapeString(p.Name))
	h.WriteString("</title>\n")
	if i != 0 {
		h.WriteString("</head>\n<body>\n")
		return []byte(h.String()), []byte("\n</body>\n</html>\n")
	}
	refs := references(p, i)
	url := func(j int) string { return b.objectURL(host(j), p.Objects[j].Path) }
	for _, j := range refs {
		o := p.Objects[j]
		switch o.Type {
		case TypeCSS:
			fmt.Fprintf(&h, "<link rel=\"stylesheet\" href=\"%s\">\n", url(j))
		case TypeJS:
			fmt.Fprintf(&h, "<script src=\"%s\"></script>\n", url(j))
		case TypeFont:
			fmt.Fprintf(&h, "<link rel=\"preload\" href=\"%s\" as=\"font\" type=\"%s\" crossorigin>\n", url(j), html.EscapeString(o.ContentType))
		case TypeOther:
			fmt.Fprintf(&h, "<link rel=\"preload\" href=\"%s\" as=\"fetch\" crossorigin>\n", url(j))
		}
	}
	h.WriteString("</head>\n<body>\n")
	for _, j := range refs {
		switch p.Objects[j].Type {
		case TypeImage:
			fmt.Fprintf(&h, "<img src=\"%s\" alt=\"\">\n", url(j))
		case TypeHTML:
			fmt.Fprintf(&h, "<iframe src=\"%s\" title=\"%s\"></iframe>\n", url(j), p.Objects[j].ID)
		}
	}
	return []byte(h.String()), []byte("\n</body>\n</html>\n")
}

// cssRules renders a stylesheet's rules: one url() per object it owns.
func (p *Page) cssRules(i int, b Base, host func(int) string) []byte {
	var h strings.Builder
	for _, j := range references(p, i) {
		o := p.Objects[j]
		u := b.objectURL(host(j), o.Path)
		switch o.Type {
		case TypeFont:
			fmt.Fprintf(&h, "@font-face{font-family:\"wl-%s\";src:url(\"%s\")}\n", o.ID, u)
		default:
			fmt.Fprintf(&h, ".wl-%s{background-image:url(\"%s\")}\n", o.ID, u)
		}
	}
	return []byte(h.String())
}
