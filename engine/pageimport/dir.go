// Package pageimport brings a user's own corpus in (docs/pages.md, "Importing a corpus"): a
// directory holding HAR files (one page each) and mahimahi recording folders (mm-webrecord's
// output, one page each). Bad or unsupported entries are skipped, counted and named with their
// reason; the page's limits (objects, bytes) hold; nothing outside the directory is read — the
// directory is opened as an os.Root and symbolic links are refused.
package pageimport

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"github.com/wirelab/wirelab/engine/browser"
	"github.com/wirelab/wirelab/engine/page"
)

// Imported is one page brought in.
type Imported struct {
	Entry string     `json:"entry"` // the HAR file or recording folder, relative to the directory
	Kind  string     `json:"kind"`  // har | mahimahi
	Page  *page.Page `json:"-"`
	// Skipped records of a mahimahi folder that were not request/response pairs (the page was
	// built from the rest).
	SkippedRecords int    `json:"skipped_records,omitempty"`
	FirstSkipped   string `json:"first_skipped,omitempty"`
}

// Skipped is an entry of the directory that is not a page.
type Skipped struct {
	Entry  string `json:"entry"`
	Reason string `json:"reason"`
}

// Result is what Dir found.
type Result struct {
	Imported []Imported `json:"imported"`
	Skipped  []Skipped  `json:"skipped"`
}

// MaxRecordBytes bounds one mahimahi record file (a response body of up to page.MaxObjectBytes
// and its headers).
const MaxRecordBytes = page.MaxObjectBytes + 1<<20

// Dir imports every HAR file (*.har) and every mahimahi recording folder directly in dir, in name
// order. Pages are named after their entry (prefix + the entry's name without .har, made a valid
// page name). An error is returned only when dir itself cannot be read.
func Dir(dir, prefix string) (*Result, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(a, b int) bool { return entries[a].Name() < entries[b].Name() })
	res := &Result{Imported: []Imported{}, Skipped: []Skipped{}}
	names := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		skip := func(format string, args ...any) {
			res.Skipped = append(res.Skipped, Skipped{Entry: name, Reason: fmt.Sprintf(format, args...)})
		}
		info, err := root.Lstat(name)
		if err != nil {
			skip("cannot be read: %v", unwrapPath(err))
			continue
		}
		pageName := uniqueName(prefix+pageNameOf(strings.TrimSuffix(name, ".har")), names)
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			skip("a symbolic link; pages import reads only what is inside the directory and refuses links")
		case info.IsDir():
			im, err := importRecording(root, name, pageName)
			if err != nil {
				skip("%v", err)
				continue
			}
			names[pageName] = true
			res.Imported = append(res.Imported, *im)
		case !info.Mode().IsRegular():
			skip("not a regular file or a folder")
		case strings.HasSuffix(strings.ToLower(name), ".har"):
			pg, err := importHAR(root, name, pageName)
			if err != nil {
				skip("%v", err)
				continue
			}
			names[pageName] = true
			res.Imported = append(res.Imported, Imported{Entry: name, Kind: "har", Page: pg})
		default:
			skip("neither a HAR file (*.har) nor a mahimahi recording folder")
		}
	}
	return res, nil
}

func importHAR(root *os.Root, name, pageName string) (*page.Page, error) {
	f, err := openRegular(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return browser.ImportHARFrom(f, name, browser.RecordOptions{Name: pageName})
}

// importRecording reads a mahimahi recording folder: every regular file is a record; files that
// are not (and links, and subfolders) are counted and the first reason kept.
func importRecording(root *os.Root, dir, pageName string) (*Imported, error) {
	sub, err := root.OpenRoot(dir)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer sub.Close()
	files, err := fs.ReadDir(sub.FS(), ".")
	if err != nil {
		return nil, unwrapPath(err)
	}
	im := &Imported{Entry: dir, Kind: "mahimahi"}
	var recs []*mahimahiRecord
	bad := func(file, why string) {
		if im.SkippedRecords == 0 {
			im.FirstSkipped = file + ": " + why
		}
		im.SkippedRecords++
	}
	for _, f := range files {
		info, err := sub.Lstat(f.Name())
		switch {
		case err != nil:
			bad(f.Name(), unwrapPath(err).Error())
			continue
		case info.Mode()&fs.ModeSymlink != 0:
			bad(f.Name(), "a symbolic link (refused)")
			continue
		case !info.Mode().IsRegular():
			bad(f.Name(), "not a regular file")
			continue
		case info.Size() > MaxRecordBytes:
			bad(f.Name(), fmt.Sprintf("%d bytes; a record is at most %d", info.Size(), int64(MaxRecordBytes)))
			continue
		}
		data, err := readAll(sub, f.Name())
		if err != nil {
			bad(f.Name(), err.Error())
			continue
		}
		rec, err := decodeRecord(f.Name(), data)
		if err != nil {
			bad(f.Name(), err.Error())
			continue
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		if im.SkippedRecords == 0 {
			return nil, errors.New("an empty folder (a mahimahi recording folder holds one file per request)")
		}
		return nil, fmt.Errorf("not a mahimahi recording folder: none of its %d files is a record (%s)", im.SkippedRecords, im.FirstSkipped)
	}
	pg, err := mahimahiPage(pageName, dir, recs)
	if err != nil {
		return nil, fmt.Errorf("mahimahi recording: %v", err)
	}
	im.Page = pg
	return im, nil
}

func readAll(root *os.Root, name string) ([]byte, error) {
	f, err := openRegular(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxRecordBytes+1))
}

// openRegular opens an entry the directory listing showed as a regular file, without blocking
// (O_NONBLOCK) and checking it again on the descriptor: an entry swapped for a FIFO or a device since
// the listing is refused, never waited on or read (docs/bad-input.md, "Files and paths").
func openRegular(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, errors.New("not a regular file")
	}
	return f, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var nameBad = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// pageNameOf makes an entry's name a page name: no spaces, no slashes, one line.
func pageNameOf(s string) string {
	s = strings.Trim(nameBad.ReplaceAllString(s, "-"), "-")
	if s == "" {
		s = "page"
	}
	return s[:min(len(s), 120)]
}

func uniqueName(name string, taken map[string]bool) string {
	if !taken[name] {
		return name
	}
	for k := 2; ; k++ {
		if n := fmt.Sprintf("%s-%d", name, k); !taken[n] {
			return n
		}
	}
}

// FileName is the file a page is written to in an output directory.
func FileName(pg *page.Page) string { return path.Clean(pageNameOf(pg.Name)) + ".json" }
