// Package userpath holds the engine's rules for the paths a user names (docs/bad-input.md, "Files
// and paths"), so that every command applies the same ones:
//
//   - An input file (a page, a trace, a server configuration, a HAR, a spec, a list, a certificate)
//     is opened only if it is a regular file, never blocking on a FIFO and never reading a device,
//     and at most a stated number of bytes of it are read (Open, ReadFile). An input directory (a
//     saved site) must be a directory (Dir).
//   - An output is checked before any work starts (Output, OutputDir): the directory it goes into
//     exists and is writable, and the output itself is not a directory (an output file) or not a
//     file (an output directory). Whether an existing output is replaced is the command's to say.
//
// Every refusal is a *Problem: what is wrong with the path in a few words ("is a FIFO (named
// pipe)") and what was wanted; Flag and Field make it the one line a flag's or a spec field's
// refusal is (`--out d: is a directory; give a file to write`, `server.config: got "/tmp/p";
// must be a regular file: it is a FIFO (named pipe)`).
package userpath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

// Problem is a path refused by one of the rules above.
type Problem struct {
	Path string
	What string // what is wrong: "does not exist", "is a FIFO (named pipe)", "is 80.0 MiB"
	Want string // what was wanted instead: "a regular file", "a file of at most 64 MiB", "a directory"
}

func (p *Problem) Error() string { return fmt.Sprintf("%s %s; give %s", p.Path, p.What, p.Want) }

// As reports whether err is (or wraps) a *Problem.
func As(err error) (*Problem, bool) {
	var p *Problem
	ok := errors.As(err, &p)
	return p, ok
}

// Flag is err as a usage error of a flag (exit 2): "--out d: is a directory; give a file to
// write". Other errors are returned unchanged.
func Flag(flag string, err error) error {
	p, ok := As(err)
	if !ok {
		return err
	}
	return cli.Usagef("%s %s: %s; give %s", flag, p.Path, p.What, p.Want)
}

// Field is err as bad input in a spec's field: `page: got "p.json"; must be a regular file: it is
// a FIFO (named pipe)`. Other errors are returned unchanged.
func Field(field string, err error) error {
	p, ok := As(err)
	if !ok {
		return err
	}
	return fielderr.Path(field, p.Path, "must be %s: it %s", p.Want, p.What)
}

func problem(path, want, format string, args ...any) *Problem {
	return &Problem{Path: path, What: fmt.Sprintf(format, args...), Want: want}
}

const (
	regular = "a regular file"
	aDir    = "a directory"
	toWrite = "a file to write"
)

// kind names what a file that is not a regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsRegular():
		return "a file"
	}
	return "not a regular file"
}

// openProblem turns an open or stat error into a Problem.
func openProblem(path, want string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return problem(path, want, "does not exist")
	case errors.Is(err, fs.ErrPermission):
		return problem(path, want, "cannot be read (permission denied)")
	case errors.Is(err, syscall.ENOTDIR):
		return problem(path, want, "does not exist (a component of the path is not a directory)")
	case errors.Is(err, syscall.ELOOP):
		return problem(path, want, "is a loop of symbolic links")
	case errors.Is(err, syscall.ENAMETOOLONG):
		return problem(path, want, "is too long a path")
	}
	return problem(path, want, "cannot be opened (%v)", unwrapPath(err))
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Open opens path for reading if it is a regular file of at most limit bytes (limit ≤ 0: any
// size). What is not a regular file is refused without being opened (a FIFO would block, a device
// could be read forever or change state on open); the check is repeated on the descriptor, so a
// path swapped after the first look is refused too.
func Open(path string, limit int64) (*os.File, error) {
	if path == "" {
		return nil, problem(path, regular, "is empty")
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, openProblem(path, regular, err)
	}
	if !st.Mode().IsRegular() {
		return nil, problem(path, regular, "is %s", kind(st.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, openProblem(path, regular, err)
	}
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, openProblem(path, regular, err)
		}
		return nil, problem(path, regular, "is %s", kind(st.Mode()))
	}
	if limit > 0 && st.Size() > limit {
		f.Close()
		return nil, tooLarge(path, Size(st.Size()), limit)
	}
	return f, nil
}

func tooLarge(path, size string, limit int64) *Problem {
	return problem(path, "a file of at most "+Size(limit), "is %s", size)
}

// ReadFile reads the regular file at path, at most limit bytes (Open's rules; a file that grows
// past limit while it is read is refused too).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadAll reads r (the file at path, opened by Open) to its end, refusing more than limit bytes
// (limit ≤ 0: any size).
func ReadAll(r io.Reader, path string, limit int64) ([]byte, error) {
	if limit <= 0 {
		return io.ReadAll(r)
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, problem(path, regular, "cannot be read (%v)", unwrapPath(err))
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, "more than "+Size(limit), limit)
	}
	return data, nil
}

// Dir checks that path is an existing directory (an input directory such as a saved site).
func Dir(path string) error {
	if path == "" {
		return problem(path, aDir, "is empty")
	}
	st, err := os.Stat(path)
	if err != nil {
		return openProblem(path, aDir, err)
	}
	if !st.IsDir() {
		return problem(path, aDir, "is %s", kind(st.Mode()))
	}
	return nil
}

// Output checks an output file before any work starts: the directory it goes into exists and is
// writable, and path is not a directory or another kind of file that a written file cannot
// replace (a FIFO, a device, a socket). An existing regular file passes: whether it is replaced is
// the command's to say.
func Output(path string) error {
	if path == "" {
		return problem(path, toWrite, "is empty")
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return problem(path, toWrite, "is %s", kind(st.Mode()))
	}
	return writableParent(path, toWrite)
}

// OutputDir checks an output directory before any work starts: an existing, writable directory,
// or a path whose parent directory exists and is writable (the command creates it); not a file.
func OutputDir(path string) error {
	const want = "a directory to write into"
	if path == "" {
		return problem(path, want, "is empty")
	}
	st, err := os.Stat(path)
	if err == nil {
		if !st.IsDir() {
			return problem(path, want, "is %s", kind(st.Mode()))
		}
		if err := unix.Access(path, unix.W_OK|unix.X_OK); err != nil {
			return problem(path, want, "is not writable (%v)", err)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return openProblem(path, want, err)
	}
	return writableParent(path, want)
}

// writableParent checks that path's directory exists, is a directory and is writable.
func writableParent(path, want string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return problem(path, want+" in an existing directory", "cannot be written: its directory %s does not exist", dir)
	case err != nil:
		return problem(path, want, "cannot be written: its directory %s: %v", dir, unwrapPath(err))
	case !st.IsDir():
		return problem(path, want+" in an existing directory", "cannot be written: %s is %s, not a directory", dir, kind(st.Mode()))
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return problem(path, want+" in a writable directory", "cannot be written: its directory %s is not writable (%v)", dir, err)
	}
	return nil
}

// Size is n bytes for a message: 512 bytes, 64 KiB, 64 MiB, 80.5 MiB.
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
