package page

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// File-backed objects (mirrored sites). An object with a File is served with the bytes of
// RootDir/File. In HTML and CSS objects the references listed in Refs are replaced by the load's
// absolute URL of the object they name (scheme, lab host, port, /L/<token>/ and the object's
// path), and the document is padded with a trailing comment (HTML <!--…-->, CSS /*…*/; spaces when
// fewer than 7 or 4 bytes remain) to exactly Size bytes: Size is the file's size plus, for each
// reference, the growth of the longest URL any load can produce over the original reference
// (FileObjectSize). Everything else in the file is served as it is.

// FileObjectSize is the served size of file-backed object i whose file has fileSize bytes.
func FileObjectSize(p *Page, i int, fileSize int64) int64 {
	size := fileSize
	for _, r := range p.Objects[i].Refs {
		if j := p.objectByID(r.Object); j >= 0 {
			worst := len(worstBase.objectURL(worstHost(0), p.Objects[j].Path))
			size += int64(max(0, worst-r.Length))
		}
	}
	return size
}

func (p *Page) objectByID(id string) int {
	for i, o := range p.Objects {
		if o.ID == id {
			return i
		}
	}
	return -1
}

// validateFiles checks file-backed objects: a root_dir, clean relative file names inside it that
// exist, references inside the file in ascending order, and sizes that match the files.
func (p *Page) validateFiles() error {
	any := false
	for _, o := range p.Objects {
		any = any || o.File != "" || len(o.Refs) > 0
	}
	if !any {
		return nil
	}
	if p.RootDir == "" {
		return fieldErr("root_dir", "", "must name the directory of the objects' files (objects have a file)")
	}
	for i, o := range p.Objects {
		f := fmt.Sprintf("objects[%d]", i)
		if o.File == "" {
			if len(o.Refs) > 0 {
				return fieldErr(f+".refs", len(o.Refs), "only file-backed objects (with a file) have refs")
			}
			continue
		}
		clean := filepath.ToSlash(filepath.Clean(o.File))
		if filepath.IsAbs(o.File) || clean != o.File || clean == ".." || strings.HasPrefix(clean, "../") {
			return fieldErr(f+".file", o.File, "must be a clean path relative to root_dir, inside it")
		}
		st, err := p.StatObjectFile(i)
		if errors.Is(err, ErrOutsideRoot) {
			return fieldErr(f+".file", o.File, "must stay inside root_dir %s; it resolves outside it (a link or ..)", p.RootDir)
		}
		if err != nil || !st.Mode().IsRegular() {
			return fieldErr(f+".file", o.File, "must be a regular file in root_dir %s", p.RootDir)
		}
		if len(o.Refs) > 0 && o.Type != TypeHTML && o.Type != TypeCSS {
			return fieldErr(f+".refs", len(o.Refs), "only html and css objects have refs; this is %s", o.Type)
		}
		end := int64(0)
		for j, r := range o.Refs {
			rf := fmt.Sprintf("%s.refs[%d]", f, j)
			if r.Offset < end || r.Length < 1 || r.Offset+int64(r.Length) > st.Size() {
				return fieldErr(rf+".offset", r.Offset, "references must lie inside the file, in ascending order, without overlap")
			}
			end = r.Offset + int64(r.Length)
			if p.objectByID(r.Object) < 0 {
				return fieldErr(rf+".object", r.Object, "must be the id of an object of the page")
			}
		}
		if want := FileObjectSize(p, i, st.Size()); o.Size != want {
			return fieldErr(f+".size", o.Size, "must be %d: the file's %d bytes plus room for its %d rewritten references", want, st.Size(), len(o.Refs))
		}
	}
	return nil
}

// fileSegments is the body of file-backed object i for base b.
func (p *Page) fileSegments(i int, b Base, host func(int) string) ([]segment, error) {
	o := p.Objects[i]
	data, err := p.ReadObjectFile(i)
	if err != nil {
		return nil, fmt.Errorf("page: object %s: %w", o.ID, err)
	}
	if len(o.Refs) == 0 {
		if int64(len(data)) != o.Size {
			return nil, fmt.Errorf("page: object %s: file %s has %d bytes, size says %d (the file changed)", o.ID, o.File, len(data), o.Size)
		}
		return []segment{{lit: data}}, nil
	}
	refs := append([]Ref(nil), o.Refs...)
	sort.Slice(refs, func(a, c int) bool { return refs[a].Offset < refs[c].Offset })
	var out []byte
	at := int64(0)
	for _, r := range refs {
		j := p.objectByID(r.Object)
		if j < 0 || r.Offset < at || r.Offset+int64(r.Length) > int64(len(data)) {
			return nil, fmt.Errorf("page: object %s: reference at %d does not fit the file (the file changed)", o.ID, r.Offset)
		}
		out = append(out, data[at:r.Offset]...)
		out = append(out, b.objectURL(host(j), p.Objects[j].Path)...)
		at = r.Offset + int64(r.Length)
	}
	out = append(out, data[at:]...)
	open, close := "<!--", "-->"
	if o.Type == TypeCSS {
		open, close = "/*", "*/"
	}
	segs := commentPadded(out, nil, o.Size, open, close, ' ')
	if segs == nil {
		return nil, fmt.Errorf("page: object %s: rewritten to %d bytes, more than its size %d", o.ID, len(out), o.Size)
	}
	return segs, nil
}
