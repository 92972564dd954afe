package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/shellquote"
	"github.com/wirelab/wirelab/engine/internal/version"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
)

func init() {
	register("shell", command{
		Runs:    true,
		Summary: "run a command behind an emulated network path (like mahimahi's shells)",
		Run:     runShell,
	})
}

type shellOptions struct {
	net        string
	origins    int
	serverCmd  string
	serverPort int
	pcapDir    string
	statsFile  string
	logFile    string
	seed       uint64
	resolver   bool
	argv       []string
}

func shellFlags(o *shellOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("shell", flag.ContinueOnError)
	fs.StringVar(&o.net, "net", "native", "network profile (docs/profile-grammar.md), e.g. rtt=100ms,bw=10mbit,loss=1% or a preset (cable, 3g, …)")
	fs.IntVar(&o.origins, "origins", 1, "number of origin addresses in the server namespace (10.77.1.1 … 10.77.1.N), 1–64")
	fs.StringVar(&o.serverCmd, "server-cmd", "", "shell command run (sh -c) in the server namespace until CMD ends")
	fs.IntVar(&o.serverPort, "server-port", 0, "wait until the server command listens on this TCP port of origin 1 before starting CMD")
	fs.StringVar(&o.pcapDir, "pcap", "", "write client.pcap and server.pcap (what crossed each side of the link) into this directory")
	fs.StringVar(&o.statsFile, "stats", "", "write the emulator's statistics as JSON to this file at exit")
	fs.StringVar(&o.logFile, "log", "", "write the engine log (header with command line and settings, then events) to this file; - for stderr")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the loss model and jitter")
	fs.BoolVar(&o.resolver, "resolver", false, "give CMD an /etc/resolv.conf naming "+labaddr.DNSAddr.String()+" (for a DNS server run by --server-cmd)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: wirelab-engine shell [flags] [-- CMD [ARG…]]")
		fmt.Fprintln(w, "\nRuns CMD (default: $SHELL) in a client network namespace whose traffic to the origins")
		fmt.Fprintln(w, "10.77.1.N crosses the emulated path. CMD and --server-cmd see WIRELAB_SERVER_ADDRS,")
		fmt.Fprintln(w, "WIRELAB_CLIENT_ADDR and WIRELAB_DNS_ADDR. The exit status is CMD's. Needs root.")
		fmt.Fprintln(w, "\nflags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseShell checks everything before anything is created: bad input is a UsageError (exit 2).
func parseShell(args []string) (shellOptions, emulator.Config, profile.Resolved, error) {
	var o shellOptions
	fs := shellFlags(&o)
	if err := parseFlags(fs, args); err != nil {
		return o, emulator.Config{}, profile.Resolved{}, err
	}
	o.argv = fs.Args()
	if len(o.argv) == 0 {
		sh := os.Getenv("SHELL")
		if sh == "" {
			sh = "/bin/sh"
		}
		o.argv = []string{sh}
	}
	if o.origins < 1 || o.origins > labaddr.MaxOrigins {
		return o, emulator.Config{}, profile.Resolved{}, cli.Usagef("origins: %d is out of range; use 1 to %d", o.origins, labaddr.MaxOrigins)
	}
	if o.serverPort < 0 || o.serverPort > 65535 {
		return o, emulator.Config{}, profile.Resolved{}, cli.Usagef("server-port: %d is out of range; use 1 to 65535", o.serverPort)
	}
	if o.serverPort != 0 && o.serverCmd == "" {
		return o, emulator.Config{}, profile.Resolved{}, cli.Usagef("server-port: %d without --server-cmd; give the command that listens on it", o.serverPort)
	}
	for _, err := range []error{checkOutput("--stats", o.statsFile), checkOutput("--log", o.logFile), checkOutputDir("--pcap", o.pcapDir)} {
		if err != nil {
			return o, emulator.Config{}, profile.Resolved{}, err
		}
	}
	r, err := profile.Parse(o.net)
	if err != nil {
		return o, emulator.Config{}, profile.Resolved{}, cli.Usagef("%v", err)
	}
	cfg, err := emulator.ConfigFromProfile(r, o.origins, o.seed)
	if err != nil {
		var pe *profile.Error
		if errors.As(err, &pe) {
			return o, emulator.Config{}, profile.Resolved{}, cli.Usagef("%v", err)
		}
		return o, emulator.Config{}, profile.Resolved{}, err
	}
	cfg.Topology.Resolver = o.resolver
	cfg.PcapDir = o.pcapDir
	if _, err := exec.LookPath(o.argv[0]); err != nil {
		return o, emulator.Config{}, profile.Resolved{}, cli.Usagef("CMD: %q is not an executable in PATH; give a command to run", o.argv[0])
	}
	return o, cfg, r, nil
}

func runShell(args []string) error {
	o, cfg, r, err := parseShell(args)
	if err != nil {
		return helpOK(err)
	}
	if err := cli.NeedRoot("shell"); err != nil {
		return err
	}
	log, closeLog, err := openEngineLog(o.logFile)
	if err != nil {
		return err
	}
	defer closeLog()
	logHeader(log, "shell", []string{
		"profile: " + r.String(),
		"resolved: " + mustJSON(r),
		fmt.Sprintf("origins: %d  seed: %d  resolver: %v  pcap: %q  stats: %q", o.origins, o.seed, o.resolver, o.pcapDir, o.statsFile),
		"server-cmd: " + o.serverCmd,
		"cmd: " + strings.Join(o.argv, " "),
	})

	// Signals are caught from before the topology exists, so an interrupt at any point still
	// removes everything.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// On a terminal, CMD shares our foreground process group and receives Ctrl-C itself; like a
	// shell running a program we then let CMD decide (SIGTERM and SIGHUP still end the run).
	// (Not signal.Ignore: an ignored SIGINT would be inherited by CMD.)
	interactive := isTerminal(os.Stdin)

	e, err := emulator.Start(cfg)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	logf(log, e, "topology %s / %s up", e.Topo.Name(netns.Client), e.Topo.Name(netns.Server))
	status, runErr := runShellCommands(o, e, log, sigs, interactive)
	sum, stopErr := e.Stop()
	logf(log, e, "stopped: up %d packets, down %d packets, drops queue %d/%d loss %d/%d, device drops %d, lateness p50 %.1f µs p99 %.1f µs max %.1f µs",
		sum.Up.Packets, sum.Down.Packets, sum.Up.DropsQueue, sum.Down.DropsQueue, sum.Up.DropsLoss, sum.Down.DropsLoss,
		sum.DeviceDrops, sum.LatenessUS.P50, sum.LatenessUS.P99, sum.LatenessUS.Max)
	if o.statsFile != "" {
		stats := map[string]any{
			"command": os.Args, "profile": r.String(), "network_resolved": r, "origins": o.origins, "seed": o.seed,
			"exit_status": status, "emulator": sum,
		}
		b, _ := json.MarshalIndent(stats, "", "  ")
		if err := os.WriteFile(o.statsFile, append(b, '\n'), 0o644); err != nil {
			stopErr = errors.Join(stopErr, err)
		}
	}
	return labExit("shell", status, runErr, stopErr)
}

// runShellCommands starts the server command and CMD and waits for CMD or a signal. It returns
// CMD's exit status (128+N for a signal N, as shells do).
func runShellCommands(o shellOptions, e *emulator.Emulator, log io.Writer, sigs <-chan os.Signal, interactive bool) (int, error) {
	env := append(os.Environ(),
		"WIRELAB_SERVER_ADDRS="+strings.Join(e.Topo.OriginAddrs(), ","),
		"WIRELAB_CLIENT_ADDR="+labaddr.ClientAddr.String(),
		"WIRELAB_DNS_ADDR="+labaddr.DNSAddr.String(),
	)
	serverDone := make(chan error, 1)
	if o.serverCmd != "" {
		srv := e.Topo.Command(netns.Server, "/bin/sh", "-c", o.serverCmd)
		srv.Env, srv.Stdout, srv.Stderr = env, os.Stderr, os.Stderr
		if err := srv.Start(); err != nil {
			return 1, fmt.Errorf("shell: server command: %w", err)
		}
		logf(log, e, "server command started (pid %d)", srv.Process.Pid)
		go func() { serverDone <- srv.Wait() }()
		if o.serverPort != 0 {
			if err := waitForPort(e, o.serverPort, serverDone, sigs); err != nil {
				return 1, fmt.Errorf("shell: %w", err)
			}
			logf(log, e, "server listens on port %d", o.serverPort)
		}
	}
	cmd := e.Topo.Command(netns.Client, o.argv...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	if interactive {
		cmd.SysProcAttr.Setpgid = false // stay in the terminal's foreground process group
	}
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("shell: %w", err)
	}
	logf(log, e, "command started (pid %d): %s", cmd.Process.Pid, strings.Join(o.argv, " "))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			status := exitStatus(cmd.ProcessState, err)
			logf(log, e, "command exited with status %d", status)
			return status, nil
		case err := <-serverDone:
			logf(log, e, "server command exited: %v", err)
			serverDone = nil
		case sig := <-sigs:
			if sig == syscall.SIGINT && interactive {
				logf(log, e, "received %v: left to the command", sig)
				continue
			}
			logf(log, e, "received %v: stopping", sig)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			// Stop (Topology.Close) waits for CMD and everything else in the namespaces to end.
			return 128 + int(sig.(syscall.Signal)), nil
		}
	}
}

// How long shell waits for --server-cmd to accept connections, and how often it tries.
const (
	serverPortWait = 30 * time.Second
	portPoll       = 10 * time.Millisecond
)

// waitForPort waits until something accepts TCP connections on origin 1's port, from inside the
// server namespace. It gives up when the server command exits, on a signal, or after serverPortWait.
func waitForPort(e *emulator.Emulator, port int, serverDone <-chan error, sigs <-chan os.Signal) error {
	addr := net.JoinHostPort(labaddr.OriginAddr(1).String(), fmt.Sprint(port))
	deadline := time.Now().Add(serverPortWait)
	tick := time.NewTicker(portPoll)
	defer tick.Stop()
	for {
		var c net.Conn
		err := e.Topo.Do(netns.Server, func() (err error) {
			c, err = net.DialTimeout("tcp4", addr, time.Second)
			return err
		})
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server-port: nothing listens on %s after 30 s", addr)
		}
		select {
		case err := <-serverDone:
			return fmt.Errorf("server command exited (%v) before listening on %s", err, addr)
		case sig := <-sigs:
			return fmt.Errorf("interrupted by %v", sig)
		case <-tick.C:
		}
	}
}

func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// openEngineLog opens the engine log: a file, "-" for stderr, "" for none.
func openEngineLog(path string) (io.Writer, func(), error) {
	switch path {
	case "":
		return io.Discard, func() {}, nil
	case "-":
		return os.Stderr, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("log: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// logHeader starts an engine log with the command line and the settings (mahimahi's habit).
func logHeader(w io.Writer, cmd string, settings []string) {
	host, _ := os.Hostname()
	var u unix.Utsname
	unix.Uname(&u)
	fmt.Fprintf(w, "# wirelab-engine %s %s\n", version.String(), cmd)
	fmt.Fprintf(w, "# command: %s\n", shellquote.Join(os.Args))
	fmt.Fprintf(w, "# started: %s  host: %s  kernel: %s  pid: %d\n", time.Now().UTC().Format(time.RFC3339Nano), host, unix.ByteSliceToString(u.Release[:]), os.Getpid())
	for _, s := range settings {
		fmt.Fprintf(w, "# %s\n", s)
	}
}

func logf(w io.Writer, e *emulator.Emulator, format string, args ...any) {
	fmt.Fprintf(w, "%10.6f %s\n", e.Now().Seconds(), fmt.Sprintf(format, args...))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}
