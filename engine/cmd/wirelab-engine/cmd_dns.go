package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"

	"github.com/wirelab/wirelab/engine/dns"
	"github.com/wirelab/wirelab/engine/egress"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/dnsserve"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/probe"
)

func init() {
	register("dns", command{
		Summary: "answer DNS for *.wirelab.test (sN → the Nth origin address; prints a ready line)",
		Run:     func(args []string) error { return runDNS(context.Background(), args, os.Stdout) },
	})
}

const dnsUsage = `usage: wirelab-engine dns --listen HOST:PORT --origins A[,B,…] [--https-alpn h3,h2]
       wirelab-engine dns --forward IP:PORT|system --listen HOST:PORT --router NAMESPACE --admit run|internet

Answers DNS queries for *.wirelab.test over UDP and TCP (docs/server.md, "DNS"): sN.wirelab.test is
the Nth address of --origins, www.wirelab.test the first. With --https-alpn every such name also
has an HTTPS record (RFC 9460: priority 1, target ".", alpn …), how a trial with client.h3 =
https-rr announces HTTP/3. A lab runs it in the server namespace at
10.77.2.53:53 beside whichever server is under test. Prints {"event":"ready","dns":…} once it
listens and {"event":"stopped","queries":N} after SIGINT/SIGTERM.

With --forward it is the egress router's DNS forwarder (docs/egress.md): it listens at --listen
inside the run's router namespace --router, asks the resolver --forward (system: the first
nameserver of /etc/resolv.conf as this process sees it) from its own namespace, and admits into
the router's set every IPv4 address of an answer that the policy --admit passes (run: the run's
local internet, 10.77.1.0/24, and only *.wirelab.test names are asked; internet: public addresses)
before it relays the answer. Prints one JSON line per admission and refusal
({"event":"admitted"|"refused","name":…,"addr":…}), and exits when its standard input closes too.
`

func runDNS(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("dns", flag.ContinueOnError)
	listen := fs.String("listen", "", "address:port to answer on (required)")
	origins := fs.String("origins", "", "comma-separated origin addresses, s1 first (required unless --forward)")
	forward := fs.String("forward", "", "forward to this resolver (IP:PORT, or system) as the egress router's forwarder")
	router := fs.String("router", "", "with --forward: the run's router namespace (wirelab-<id>-s): where --listen is and what is admitted into")
	httpsALPN := fs.String("https-alpn", "", "give every origin name an HTTPS record (RFC 9460) listing these comma-separated ALPN ids, e.g. h3,h2 (client.h3 = https-rr)")
	admit := fs.String("admit", "", "with --forward: the policy of admissions: run or internet")
	fs.Usage = func() { fmt.Fprint(fs.Output(), dnsUsage); fs.PrintDefaults() }
	if err := parseNoArgs(fs, args); err != nil {
		return helpOK(err)
	}
	if *forward != "" {
		if *origins != "" || *httpsALPN != "" {
			return cli.Usagef("dns: --origins, --https-alpn and --forward: --forward goes alone")
		}
		return runForwarder(ctx, *forward, *listen, *router, *admit, os.Stdin, stdout)
	}
	if *router != "" || *admit != "" {
		return cli.Usagef("dns: --router and --admit go with --forward")
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
	var alpn []string
	if *httpsALPN != "" {
		for i, id := range strings.Split(*httpsALPN, ",") {
			if id = strings.TrimSpace(id); id == "" || len(id) > 255 {
				return cli.Usagef("https-alpn[%d]: got %q; must be an ALPN id (h3, h2, http/1.1)", i, id)
			}
			alpn = append(alpn, id)
		}
	}
	srv, err := dns.ListenRecords(*listen, dns.OriginZone(addrs, alpn))
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

// runForwarder is `dns --forward`: the egress router's DNS forwarder (engine/egress).
func runForwarder(ctx context.Context, upstream, listen, router, admit string, stdin io.Reader, stdout io.Writer) error {
	lp, err := netip.ParseAddrPort(listen)
	if err != nil {
		return cli.Usagef("listen: got %q; must be an IP address and port (10.77.2.53:53)", listen)
	}
	if router == "" {
		return cli.Usagef("router: required with --forward (the run's router namespace, wirelab-<id>-s)")
	}
	pol, err := egress.PolicyFor(admit)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if upstream == egress.SystemUpstream {
		if upstream, err = probe.SystemResolverAddr(); err != nil {
			return err
		}
	} else if _, err := netip.ParseAddrPort(upstream); err != nil {
		return cli.Usagef("forward: got %q; must be IP:PORT or system", upstream)
	}
	var out sync.Mutex
	emit := func(v any) error {
		b, _ := json.Marshal(v)
		out.Lock()
		defer out.Unlock()
		_, err := fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	f, err := egress.New(egress.Config{
		Upstream: upstream, Policy: pol,
		Admit:   func(addrs []netip.Addr) error { return netns.AdmitIn(router, addrs...) },
		OnEvent: func(ev egress.Event) { _ = emit(ev) },
	})
	if err != nil {
		return err
	}
	var pc net.PacketConn
	var ln net.Listener
	err = netns.DoIn(router, func() (err error) {
		pc, ln, err = dnsserve.Listen(lp.String())
		return err
	})
	if err != nil {
		return fmt.Errorf("dns forwarder: listen in %s: %w", router, err)
	}
	if err := f.Serve(pc, ln); err != nil {
		return err
	}
	defer f.Close()
	ctx, stop := cli.SignalContext(ctx)
	defer stop()
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stdin); close(eof) }()
	if err := emit(egress.Ready{Event: "ready", DNS: lp.String(), Upstream: upstream, Admit: admit}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-eof:
	}
	if err := f.Close(); err != nil {
		return err
	}
	return emit(egress.Stopped{Event: "stopped", Stats: f.Stats()})
}
