package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"github.com/wirelab/wirelab/engine/dns"
	"github.com/wirelab/wirelab/engine/internal/cli"
)

func init() {
	register("dns", command{
		Summary: "answer DNS for *.wirelab.test (sN → the Nth origin address; prints a ready line)",
		Run:     func(args []string) error { return runDNS(context.Background(), args, os.Stdout) },
	})
}

const dnsUsage = `usage: wirelab-engine dns --listen HOST:PORT --origins A[,B,…]
Answers DNS queries for *.wirelab.test over UDP and TCP (docs/server.md, "DNS"): sN.wirelab.test is
the Nth address of --origins, www.wirelab.test the first. A lab runs it in the server namespace at
10.77.2.53:53 beside whichever server is under test. Prints {"event":"ready","dns":…} once it
listens and {"event":"stopped","queries":N} after SIGINT/SIGTERM.
`

func runDNS(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("dns", flag.ContinueOnError)
	listen := fs.String("listen", "", "address:port to answer on (required)")
	origins := fs.String("origins", "", "comma-separated origin addresses, s1 first (required)")
	fs.Usage = func() { fmt.Fprint(fs.Output(), dnsUsage); fs.PrintDefaults() }
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if fs.NArg() != 0 {
		return cli.Usagef("dns: unexpected argument %q", fs.Arg(0))
	}
	if *listen == "" || *origins == "" {
		return cli.Usagef("dns: --listen and --origins are required")
	}
	if _, err := netip.ParseAddrPort(*listen); err != nil {
		return cli.Usagef("listen: got %q; must be an IP address and port (10.77.2.53:53)", *listen)
	}
	var addrs []netip.Addr
	for i, a := range strings.Split(*origins, ",") {
		ip, err := netip.ParseAddr(strings.TrimSpace(a))
		if err != nil {
			return cli.Usagef("origins[%d]: got %q; must be an IP address", i, a)
		}
		addrs = append(addrs, ip)
	}
	ctx, stop := cli.SignalContext(ctx)
	defer stop()
	srv, err := dns.Listen(*listen, dns.OriginRecords(addrs))
	if err != nil {
		return err
	}
	defer srv.Close()
	line, _ := json.Marshal(map[string]any{"event": "ready", "pid": os.Getpid(), "dns": srv.Addr()})
	if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
		return err
	}
	<-ctx.Done()
	queries := srv.Queries()
	if err := srv.Close(); err != nil {
		return err
	}
	line, _ = json.Marshal(map[string]any{"event": "stopped", "queries": queries})
	_, err = fmt.Fprintf(stdout, "%s\n", line)
	return err
}
