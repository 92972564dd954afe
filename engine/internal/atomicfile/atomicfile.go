// Package atomicfile writes files that a reader sees either whole or not at all, and that survive
// a crash once written: the data goes to a temporary file beside the target, is flushed to disk
// (fsync), and is then renamed (WriteFile) or hard-linked (Create) into place; the directory is
// flushed last so that the new name is durable too.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data (mode perm), atomically: a concurrent reader sees the old
// file or the new one, never a part. Nothing is left behind on error.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("atomicfile: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// Create writes data to path (mode perm) atomically and exclusively: it fails with an error
// wrapping os.ErrExist when path exists, and then changes nothing. Two processes creating the same
// path at once: exactly one succeeds.
func Create(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	// link(2) fails if the target exists: exclusive, and readers never see half a file.
	if err := os.Link(tmp, path); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// writeTemp writes data to a new temporary file in path's directory, flushed and closed, and
// returns its name.
func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", fmt.Errorf("atomicfile: %w", err)
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", fmt.Errorf("atomicfile: %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("atomicfile: %s: %w", path, err)
	}
	return name, nil
}

// syncDir flushes a directory, so that a name just linked or renamed into it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("atomicfile: sync %s: %w", dir, err)
	}
	return nil
}
