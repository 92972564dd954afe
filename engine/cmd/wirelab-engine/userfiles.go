package main

import (
	"crypto/x509"
	"io"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/userpath"
)

// The files a flag names, by the rules of internal/userpath (docs/bad-input.md, "Files and paths"):
// inputs are regular files (or "-", standard input, where a flag says so) read up to a limit;
// outputs are checked before any work starts. Every refusal is one line naming the flag, exit 2.

// maxListBytes bounds a list given as a file (URLs, sites, certificates).
const maxListBytes = 16 << 20

// openInput opens the file a flag names ("-": stdin, when allowed) for reading; limit ≤ 0: a
// file of any size (a list whose reader stops at its own limit).
func openInput(flag, path string, limit int64, stdin io.Reader) (io.ReadCloser, error) {
	if path == "-" && stdin != nil {
		if limit > 0 {
			stdin = io.LimitReader(stdin, limit+1)
		}
		return io.NopCloser(stdin), nil
	}
	f, err := userpath.Open(path, limit)
	if err != nil {
		return nil, userpath.Flag(flag, err)
	}
	return f, nil
}

// readInput reads the file a flag names ("-": stdin, when allowed), at most limit bytes.
func readInput(flag, path string, limit int64, stdin io.Reader) ([]byte, error) {
	r, err := openInput(flag, path, limit, stdin)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := userpath.ReadAll(r, path, limit)
	if err != nil {
		return nil, userpath.Flag(flag, err)
	}
	return data, nil
}

// caPool adds the certificates of the PEM file a flag names to pool (a new pool when nil).
func caPool(flag, path string, pool *x509.CertPool) (*x509.CertPool, error) {
	pem, err := readInput(flag, path, maxListBytes, nil)
	if err != nil {
		return nil, err
	}
	if pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, cli.Usagef("%s %s: holds no PEM certificate", flag, path)
	}
	return pool, nil
}

// checkOutput refuses an output file a flag names that cannot be written (before any work).
func checkOutput(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	return userpath.Flag(flag, userpath.Output(path))
}

// checkOutputDir refuses an output directory a flag names that cannot be written or made.
func checkOutputDir(flag, path string) error {
	if path == "" {
		return nil
	}
	return userpath.Flag(flag, userpath.OutputDir(path))
}

// certError is a --cert file's problem as one line: the path's (userpath) or its content's.
func certError(path string, err error) error {
	if _, ok := userpath.As(err); ok {
		return userpath.Flag("--cert", err)
	}
	return cli.Usagef("--cert %s: %v", path, err)
}
