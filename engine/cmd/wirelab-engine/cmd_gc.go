package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/wirelab/wirelab/engine/browser"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/tcpplus"
	"github.com/wirelab/wirelab/engine/trial"
)

func init() {
	register("gc", command{
		Summary: "remove namespaces and files left behind by crashed runs (never a live run's)",
		Run:     runGC,
	})
}

func runGC(args []string) error {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	quiet := fs.Bool("q", false, "print nothing unless something fails")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wirelab-engine gc [-q]\n\nRemoves what crashed wirelab runs left: processes in their namespaces, the namespaces\n(wirelab-<id>-c/-s), /etc/netns/wirelab-* and state files in "+netns.StateDir+",\nTCP+ congestion controls whose users are gone, TCP+ measurement paths, killed trials'\nprivate directories ("+os.TempDir()+"/wirelab-trial-<id>: certificates) and the Chromium\nprofiles ($TMPDIR/"+browser.ProfilePrefix+"<pid>-*) of killed browser loads.\nRuns whose owner process is alive are left alone.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if fs.NArg() != 0 {
		return cli.Usagef("gc: unexpected argument %q; gc takes no arguments", fs.Arg(0))
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("gc: needs root (namespaces live in %s)", "/run/netns")
	}
	rep, err := netns.GC()
	// TCP+ congestion controls registered by dead runs, and leftover TCP+ measurement paths.
	plus, perr := tcpplus.GC()
	rep.Removed = append(rep.Removed, plus...)
	// Private directories (certificates) of trials that were killed; after netns.GC, which removes
	// their state files.
	dirs, terr := trial.GC()
	rep.Removed = append(rep.Removed, dirs...)
	// Chromium profiles of browser loads whose process was killed.
	profiles, berr := browser.GCProfiles("")
	rep.Removed = append(rep.Removed, profiles...)
	err = errors.Join(err, perr, terr, berr)
	if !*quiet {
		for _, r := range rep.Removed {
			fmt.Println("removed", r)
		}
		for _, k := range rep.Kept {
			fmt.Println("kept live run", k)
		}
		if len(rep.Removed) == 0 && err == nil {
			fmt.Println("nothing to remove")
		}
	}
	if err != nil {
		return fmt.Errorf("gc: %w", err)
	}
	return nil
}
