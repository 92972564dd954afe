// Command wirelab-engine is wirelab's data plane: it runs one trial end to end and offers the
// standalone tools (shell, serve, fetch, bench, gc). Each subcommand lives in its own cmd_*.go file
// and registers itself in init().
package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/netns"
)

// command is one subcommand. Run gets the arguments after the subcommand's name.
type command struct {
	Summary string
	Run     func(args []string) error
	// Runs: the command creates runs (topologies). What every run reads from the environment
	// (checkRunEnv) is its bad input, checked before anything else.
	Runs bool
}

var commands = map[string]command{}

func register(name string, c command) {
	if _, dup := commands[name]; dup {
		panic("duplicate command " + name)
	}
	if c.Runs {
		run := c.Run
		c.Run = func(args []string) error {
			if err := checkRunEnv(); err != nil {
				return err
			}
			return run(args)
		}
	}
	commands[name] = c
}

// checkRunEnv checks what every run takes from the environment (netns.HaltPollEnv), so that a
// bad value is a usage error (exit 2, one line) before a run starts rather than a failure inside
// the emulator's start.
func checkRunEnv() error {
	if _, err := netns.HaltPollFromEnv(); err != nil {
		return cli.Usagef("%v", err)
	}
	return nil
}

func usage() string {
	var b strings.Builder
	b.WriteString("usage: wirelab-engine COMMAND [flags] (COMMAND -h for its flags)\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].Summary)
	}
	return b.String()
}

// fileModeMask is the engine's umask whatever the user's: what it writes (trial directories,
// records, HARs, pcaps, pages, reports of bench runs) is 0644 and its directories 0755, so results
// have the same modes on every machine; secrets — the run's keys, a --keylog file — are created
// 0600 explicitly and the run's private directory is 0711.
const fileModeMask = 0o022

func main() {
	syscall.Umask(fileModeMask)
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Print(usage())
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "wirelab-engine: unknown command %q; run wirelab-engine --help for the list\n", os.Args[1])
		os.Exit(2)
	}
	os.Exit(exitCode(c.Run(os.Args[2:])))
}

// exitCode prints err (one line) and maps it to the process exit status.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var exit *cli.ExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	// One line, whatever the error holds (a wrapped multi-line error, a joined list), and none of
	// its characters can drive the terminal (a page name, a path or a URL may hold escapes).
	fmt.Fprintf(os.Stderr, "wirelab-engine: %s\n", cli.Printable(strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")))
	if cli.IsUsage(err) {
		return 2
	}
	return 1
}
