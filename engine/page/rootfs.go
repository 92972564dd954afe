package page

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Files of file-backed objects are only ever opened through an os.Root on the page's root_dir
// (openat2-style resolution: every component, symbolic links and ".." included, is resolved inside
// the root at open time, and the open fails if resolution would leave it). A link that stays inside
// the root is followed; one that leaves it — to a file, to a directory, through a chain of links, or
// by ".." after a link — is refused with ErrOutsideRoot. The check is made on the descriptor that
// is read, not on a path string checked earlier, so a file swapped for a link after validation is
// refused too. The server answers such an object with 404.

// ErrOutsideRoot is wrapped by every error for a file-backed object whose file resolves outside the
// page's root_dir (docs/bad-input.md).
var ErrOutsideRoot = errors.New("resolves outside root_dir (a link or .. leaving the page's directory)")

// openInRoot opens rel (slash-separated, relative to dir) for reading without leaving dir. It
// refuses what is not a regular file (never blocking on a FIFO or a device).
func openInRoot(dir, rel string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("root_dir %s: %w", dir, err)
	}
	defer root.Close()
	name := filepath.FromSlash(rel)
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, classifyRootErr(dir, rel, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%v)", rel, st.Mode().Type())
	}
	return f, nil
}

// statInRoot is os.Stat of rel inside dir with openInRoot's containment (links followed only while
// they stay inside dir).
func statInRoot(dir, rel string) (fs.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("root_dir %s: %w", dir, err)
	}
	defer root.Close()
	st, err := root.Stat(filepath.FromSlash(rel))
	if err != nil {
		return nil, classifyRootErr(dir, rel, err)
	}
	return st, nil
}

// classifyRootErr wraps ErrOutsideRoot when resolving rel left the root: os.Root said so, or the
// same path followed without containment exists (the decision to refuse was os.Root's; this only
// picks the message).
func classifyRootErr(dir, rel string, err error) error {
	var pe *fs.PathError
	escapes := errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
	if _, serr := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); escapes || serr == nil {
		return fmt.Errorf("%s: %w", rel, ErrOutsideRoot)
	}
	return err
}

// ReadObjectFile reads file-backed object i's file, inside root_dir only (ErrOutsideRoot otherwise),
// and at most MaxObjectBytes of it.
func (p *Page) ReadObjectFile(i int) ([]byte, error) {
	f, err := openInRoot(p.RootDir, p.Objects[i].File)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxObjectBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > MaxObjectBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", p.Objects[i].File, int64(MaxObjectBytes))
	}
	return data, nil
}

// StatObjectFile is the file information of file-backed object i's file, inside root_dir only.
func (p *Page) StatObjectFile(i int) (fs.FileInfo, error) {
	return statInRoot(p.RootDir, p.Objects[i].File)
}
