package userpath

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// special makes a FIFO and a socket in dir and returns their paths with a character device's.
func special(t *testing.T, dir string) map[string]string {
	t.Helper()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return map[string]string{
		"a FIFO (named pipe)": fifo,
		"a socket":            sock,
		"a character device":  "/dev/zero",
		"a directory":         dir,
	}
}

func TestOpenRefusesWhatIsNotARegularFileWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	for want, path := range special(t, dir) {
		done := make(chan error, 1)
		go func() {
			f, err := Open(path, 1<<20)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			p, ok := As(err)
			if !ok || p.What != "is "+want || p.Want != "a regular file" || p.Path != path {
				t.Errorf("Open(%s): %#v, want is %s", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) blocked", path)
		}
	}
}

func TestReadFileLimits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(path, 10); err != nil || string(data) != "0123456789" {
		t.Fatalf("ReadFile at the limit: %q, %v", data, err)
	}
	_, err := ReadFile(path, 9)
	if p, ok := As(err); !ok || p.What != "is 10 bytes" || p.Want != "a file of at most 9 bytes" {
		t.Fatalf("ReadFile over the limit: %v", err)
	}
	// a file that grows past the limit while it is read (here: ReadAll of more than the limit)
	_, err = ReadAll(strings.NewReader(strings.Repeat("x", 2048)), path, 1024)
	if p, ok := As(err); !ok || p.What != "is more than 1 KiB" {
		t.Fatalf("ReadAll over the limit: %v", err)
	}
	_, err = ReadFile(filepath.Join(dir, "none"), 9)
	if p, ok := As(err); !ok || p.What != "does not exist" {
		t.Fatalf("missing: %v", err)
	}
	_, err = ReadFile(filepath.Join(path, "x"), 9)
	if p, ok := As(err); !ok || !strings.HasPrefix(p.What, "does not exist") {
		t.Fatalf("under a file: %v", err)
	}
}

func TestOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	specials := special(t, t.TempDir())
	for _, ok := range []string{file, filepath.Join(dir, "new.json")} {
		if err := Output(ok); err != nil {
			t.Errorf("Output(%s): %v", ok, err)
		}
	}
	cases := map[string]string{
		dir:                                  "is a directory",
		specials["a FIFO (named pipe)"]:      "is a FIFO (named pipe)",
		"/dev/null":                          "is a character device",
		filepath.Join(dir, "none", "x.json"): "cannot be written: its directory " + filepath.Join(dir, "none") + " does not exist",
		filepath.Join(file, "x.json"):        "cannot be written: " + file + " is a file, not a directory",
		"":                                   "is empty",
	}
	for path, want := range cases {
		err := Output(path)
		if p, ok := As(err); !ok || p.What != want {
			t.Errorf("Output(%q): %v, want %q", path, err, want)
		}
	}
	if got := Flag("--out", Output(dir)).Error(); got != "--out "+dir+": is a directory; give a file to write" {
		t.Errorf("Flag: %s", got)
	}
}

func TestOutputDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{dir, filepath.Join(dir, "new")} {
		if err := OutputDir(ok); err != nil {
			t.Errorf("OutputDir(%s): %v", ok, err)
		}
	}
	for path, want := range map[string]string{
		file:                               "is a file",
		filepath.Join(dir, "none", "deep"): "cannot be written: its directory " + filepath.Join(dir, "none") + " does not exist",
	} {
		if p, ok := As(OutputDir(path)); !ok || p.What != want {
			t.Errorf("OutputDir(%s): %v, want %q", path, p, want)
		}
	}
}

func TestDirAndField(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Dir(dir); err != nil {
		t.Fatal(err)
	}
	err := Field("page", Dir(file))
	if got := err.Error(); got != `page: got "`+file+`"; must be a directory: it is a file` {
		t.Errorf("Field: %s", got)
	}
}
