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
	owner := fs.Int("owner", 0, "only the runs of this dead owner process (the pid of a killed trial/shell)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wirelab-engine gc [-q] [--owner PID]\n\nRemoves what crashed wirelab runs left: processes in their namespaces, the namespaces\n(wirelab-<id>-c/-s/-i), /etc/netns/wirelab-* and state files in "+netns.StateDir+", the host\nside of egress runs (veth ends wirelab<id>, nftables tables ip wirelab-<id>, their hold on\nIPv4 forwarding of the host's way out, restored when no run needs it; docs/egress.md),\nTCP+ congestion controls whose users are gone, TCP+ measurement paths, killed trials'\nprivate directories ("+os.TempDir()+"/wirelab-trial-<id>: certificates) and the Chromium\nprofiles ($TMPDIR/"+browser.ProfilePrefix+"<pid>-*) of killed browser loads.\nRuns whose owner process is alive are left alone.\n\nWith --owner PID, only the runs that process owned (their state files name it) are removed,\nby the same code, with their private directories, and the Chromium profiles and TCP+\ncontrols no live process uses; no other run and no orphan namespace is touched. wirelab's\nrunner calls it when an engine dies under it (docs/bad-input.md).")
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
	if *owner < 0 {
		return cli.Usagef("--owner %d: must be a process id (> 0)", *owner)
	}
	var rep netns.GCReport
	var err, terr error
	var dirs []string
	if *owner > 0 {
		rep, err = netns.GCOwner(*owner)
		// Private directories of exactly the runs just removed.
		dirs, terr = trial.GCRuns(rep.Runs)
	} else {
		rep, err = netns.GC()
		// Private directories (certificates) of trials that were killed; after netns.GC, which
		// removes their state files.
		dirs, terr = trial.GC()
	}
	rep.Removed = append(rep.Removed, dirs...)
	// TCP+ congestion controls registered by dead runs, and leftover TCP+ measurement paths.
	plus, perr := tcpplus.GC()
	rep.Removed = append(rep.Removed, plus...)
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
