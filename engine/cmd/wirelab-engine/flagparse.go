package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/wirelab/wirelab/engine/internal/cli"
)

// errHelp ends a command successfully after it printed its usage (-h).
var errHelp = errors.New("help shown")

// parseFlags parses args with fs: -h prints the usage to stdout (errHelp), any other problem is a
// one-line UsageError (exit 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(os.Stdout)
		fs.Usage()
		return errHelp
	}
	if err != nil {
		return cli.Usagef("%s: %v; run wirelab-engine %s -h for the flags", fs.Name(), err, fs.Name())
	}
	return nil
}

// parseNoArgs is parseFlags for a command that takes flags only: a positional argument is a
// UsageError naming it.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return cli.Usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// runFlags are the flags the control plane gives both run commands (trial, loadtest) alike:
// --spec FILE (- for stdin), --out DIR, --progress, --check.
type runFlags struct {
	spec, out       string
	progress, check bool
}

// bindRunFlags defines the run commands' common flags on fs.
func bindRunFlags(fs *flag.FlagSet) *runFlags {
	f := &runFlags{}
	fs.StringVar(&f.spec, "spec", "", "")
	fs.StringVar(&f.out, "out", "", "")
	fs.BoolVar(&f.progress, "progress", false, "")
	fs.BoolVar(&f.check, "check", false, "")
	return f
}

// parseOwnUsage is parseNoArgs for a command with a usage text of its own (trial, loadtest): -h
// prints usage to stdout (errHelp); a bad flag is "NAME: ERR (wirelab-engine NAME -h lists the
// flags)", an argument "NAME: unexpected argument", each a UsageError.
func parseOwnUsage(fs *flag.FlagSet, args []string, usage string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Print(usage)
		return errHelp
	}
	if err != nil {
		return cli.Usagef("%s: %v (wirelab-engine %s -h lists the flags)", fs.Name(), err, fs.Name())
	}
	if fs.NArg() != 0 {
		return cli.Usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// helpOK turns errHelp into success.
func helpOK(err error) error {
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}
