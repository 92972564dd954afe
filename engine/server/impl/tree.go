package impl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wirelab/wirelab/engine/page"
)

// Tree lays a page out as files for a server that serves files, so that it serves exactly what
// the built-in server generates: the same bytes under the same URLs.
//
// Objects whose bytes do not depend on the load (page.EmbedsURLs is false: images, scripts,
// fonts, file-backed objects without references) are written once, into <root>/.static. For
// each load, Make builds <root>/s<N>/L/<token>/<path> for every origin N: the load's own
// rendering of the objects that embed URLs (the root HTML, CSS with url()s) and a hard link to the
// static file of every other object — no copy, and no symbolic link a server could be told not
// to follow. Remove deletes a load's tree. A server's document root for origin N is OriginRoot(N).
type Tree struct {
	root   string
	pg     *page.Page
	static []string // per object: its file in .static, or "" when it embeds URLs
}

// NewTree writes the page's static objects below root (created, 0755; its parent must exist).
func NewTree(root string, pg *page.Page) (*Tree, error) {
	t := &Tree{root: root, pg: pg, static: make([]string, len(pg.Objects))}
	if err := os.Mkdir(root, 0o755); err != nil {
		return nil, fmt.Errorf("document root: %w", err)
	}
	dir := filepath.Join(root, ".static")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("document root: %w", err)
	}
	for i := range pg.Objects {
		if pg.EmbedsURLs(i) {
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("%d", i))
		// Any base will do: the bytes of these objects do not depend on it.
		if err := t.write(path, i, page.Base{Scheme: "https", Token: "static"}); err != nil {
			return nil, err
		}
		t.static[i] = path
	}
	return t, nil
}

// OriginRoot is the document root of origin i (0-based: s1 is 0).
func (t *Tree) OriginRoot(i int) string { return filepath.Join(t.root, fmt.Sprintf("s%d", i+1)) }

// Root is the directory holding every origin's document root.
func (t *Tree) Root() string { return t.root }

// Make builds the files of one load: every object below its origin's L/<token>/, the root also
// under its own path; scheme and port are those of the load's URLs (port 0: the scheme's default).
func (t *Tree) Make(token, scheme string, port int) error {
	base := page.Base{Scheme: scheme, Port: port, Token: token}
	if err := page.ValidToken(token); err != nil {
		return err
	}
	for i, o := range t.pg.Objects {
		dst := filepath.Join(t.OriginRoot(o.Origin), "L", token, filepath.FromSlash(strings.TrimPrefix(o.Path, "/")))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("document root: %w", err)
		}
		if t.static[i] != "" {
			if err := os.Link(t.static[i], dst); err != nil {
				return fmt.Errorf("document root: %w", err)
			}
			continue
		}
		if err := t.write(dst, i, base); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes one load's files (every origin's L/<token>).
func (t *Tree) Remove(token string) error {
	if err := page.ValidToken(token); err != nil {
		return err
	}
	var errs []error
	for i := range t.pg.Origins {
		if err := os.RemoveAll(filepath.Join(t.OriginRoot(i), "L", token)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t *Tree) write(path string, i int, base page.Base) error {
	body, err := t.pg.Body(i, base)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("document root: %w", err)
	}
	n, err := io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("document root: %s: %w", path, err)
	}
	if n != t.pg.Objects[i].Size {
		return fmt.Errorf("document root: %s: wrote %d bytes of %d", path, n, t.pg.Objects[i].Size)
	}
	return nil
}
