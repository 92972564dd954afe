package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/sites"
)

func init() {
	register("sites", command{
		Runs:    true,
		Summary: "a local internet of named sites for the probe; runs a command among them (ls: the catalog)",
		Run:     func(args []string) error { return runSites(args, os.Stdout) },
	})
}

const sitesUsage = `usage: wirelab-engine sites [flags] [-- CMD [ARG…]]
       wirelab-engine sites ls [--json]
       wirelab-engine sites serve --cert-dir DIR   (run by the first form in the internet namespace)

Starts the local internet — the catalog's sites (sites ls) and their DNS server (*.wirelab.test,
with HTTPS records) in a namespace of their own behind the egress router, which the emulated path
leads to (docs/egress.md) — and runs CMD (default: $SHELL) in the client namespace, whose
resolv.conf names the router's DNS forwarder. CMD sees WIRELAB_CA_FILE (the
sites' CA), WIRELAB_DNS_ADDR and WIRELAB_SITES (the catalog's URLs). The exit status is CMD's.
Everything is removed on exit, error, Ctrl-C or SIGTERM; after a SIGKILL, wirelab-engine gc does it.
Needs root. Example: wirelab-engine sites -- wirelab-engine probe h1.wirelab.test h3.wirelab.test

flags:`

func runSites(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "ls":
			return sitesLs(args[1:], stdout)
		case "serve":
			return sitesServe(args[1:], stdout)
		}
	}
	fs := flag.NewFlagSet("sites", flag.ContinueOnError)
	netFlag := fs.String("net", sites.DefaultNet, "network profile of every site's path; each site's extra round trip is added (origin_delay)")
	pcapDir := fs.String("pcap", "", "write client.pcap and server.pcap (what crossed the link) into this directory")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), sitesUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	argv := fs.Args()
	if len(argv) == 0 {
		sh := os.Getenv("SHELL")
		if sh == "" {
			sh = "/bin/sh"
		}
		argv = []string{sh}
	}
	if _, err := sites.Profile(*netFlag); err != nil {
		var pe *profile.Error
		if errors.As(err, &pe) {
			return cli.Usagef("net: %v", err)
		}
		return err
	}
	if *pcapDir != "" {
		if err := checkOutputDir("--pcap", *pcapDir); err != nil {
			return err
		}
	}
	if err := cli.NeedRoot("sites"); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("sites: %w", err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	interactive := isTerminal(os.Stdin)
	p, err := lab.PrepareLive(lab.FarInternet, *netFlag, 1)
	if err != nil {
		return fmt.Errorf("sites: %w", err)
	}
	l, err := lab.Start(context.Background(), p, lab.Options{Engine: self, PcapDir: *pcapDir})
	if err != nil {
		return fmt.Errorf("sites: %w", err)
	}
	status, runErr := runInLab(l, argv, sigs, interactive)
	_, closeErr := l.Close()
	return labExit("sites", status, runErr, closeErr)
}

// runInLab runs CMD in the lab's client namespace until it ends or a signal comes; it returns
// CMD's exit status (128+N for a signal N).
func runInLab(l *lab.Lab, argv []string, sigs <-chan os.Signal, interactive bool) (int, error) {
	cmd := l.Command(argv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if interactive {
		cmd.SysProcAttr.Setpgid = false // stay in the terminal's foreground process group
	}
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("sites: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			return exitStatus(cmd.ProcessState, err), nil
		case sig := <-sigs:
			if sig == syscall.SIGINT && interactive {
				continue // the command got it from the terminal and decides
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(netns.KillGrace):
			}
			return 128 + int(sig.(syscall.Signal)), nil
		}
	}
}

// siteListing is one entry of `sites ls --json`.
type siteListing struct {
	sites.Site
	URL      string                       `json:"url"`
	Addr     string                       `json:"addr"`
	Expected map[string]sites.Expectation `json:"expected"`
	Refused  bool                         `json:"expected_refused"`
}

func sitesLs(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sites ls", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the catalog as JSON, with what a correct probe reports for each site")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if fs.NArg() != 0 {
		return cli.Usagef("sites ls: unexpected argument %q", fs.Arg(0))
	}
	var list []siteListing
	n := 0
	for _, s := range sites.Catalog() {
		e := siteListing{Site: s, URL: s.URL()}
		e.Expected, e.Refused = s.Expected()
		if s.Addr.IsValid() {
			e.Addr = s.Addr.String()
		} else {
			n++
			e.Addr = labaddr.OriginAddr(n).String()
		}
		list = append(list, e)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	for _, e := range list {
		protos := make([]string, len(e.Protocols))
		for i, p := range e.Protocols {
			protos[i] = string(p)
		}
		fmt.Fprintf(stdout, "%-26s %-12s %-28s %s\n", e.Name, e.Addr, strings.Join(protos, ","), e.Role)
	}
	return nil
}

// sitesServe runs the catalog's servers and their DNS server on the run's addresses (inside the
// local internet's namespace, behind the egress router) until SIGINT/SIGTERM.
func sitesServe(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sites serve", flag.ContinueOnError)
	certDir := fs.String("cert-dir", "", "directory for the sites' certificates (required; the files are removed at exit)")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if *certDir == "" || fs.NArg() != 0 {
		return cli.Usagef("sites serve: want --cert-dir DIR and no arguments")
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	catalog := sites.Catalog()
	var addrs []netip.Addr
	for i := range sites.Served(catalog) {
		addrs = append(addrs, labaddr.OriginAddr(i+1))
	}
	run, err := sites.Serve(sites.ServeConfig{Sites: catalog, Addrs: addrs, DNS: netip.AddrPortFrom(netns.InternetDNSAddr, 53).String(), CertDir: *certDir})
	if err != nil {
		return fmt.Errorf("sites serve: %w", err)
	}
	ready := sites.ServeReady{Event: "ready", CAFile: filepath.Join(run.Certs.Dir, server.CAFile), SPKI: run.Certs.SPKIHash, DNS: run.DNS.Addr()}
	i := 0
	for _, s := range catalog {
		a := s.Addr
		if !a.IsValid() {
			a = addrs[i]
			i++
		}
		ready.Sites = append(ready.Sites, sites.SiteAddr{Name: s.Name, Addr: a.String()})
	}
	b, _ := json.Marshal(ready)
	fmt.Fprintf(stdout, "%s\n", b)
	<-sigs
	if err := run.Close(); err != nil {
		return fmt.Errorf("sites serve: %w", err)
	}
	fmt.Fprintln(stdout, `{"event":"stopped"}`)
	return nil
}

// labExit ends a command that ran a program in a lab (shell, sites): its failure to run, with the
// lab's cleanup error; else the program's exit status — a cleanup error printed, and a success
// made exit status 1 by it.
func labExit(command string, status int, runErr, cleanupErr error) error {
	if runErr != nil {
		return errors.Join(runErr, cleanupErr)
	}
	if cleanupErr != nil {
		fmt.Fprintf(os.Stderr, "wirelab-engine: %s: cleanup: %v\n", command, cleanupErr)
		if status == 0 {
			status = 1
		}
	}
	if status != 0 {
		return &cli.ExitError{Code: status}
	}
	return nil
}
