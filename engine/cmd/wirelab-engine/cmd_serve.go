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
	"strconv"
	"strings"
	"sync"

	"github.com/wirelab/wirelab/engine/dns"
	"github.com/wirelab/wirelab/engine/internal/atomicfile"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/server"
)

func init() {
	register("serve", command{
		Summary: "serve a page on origin addresses over h1, h1s, h2, h2c, h3, spdy3 (prints a ready line)",
		Run:     func(args []string) error { return runServe(context.Background(), args, os.Stdout) },
	})
}

const serveUsage = `usage: wirelab-engine serve --page NAME --addrs A[,B,…] [flags]
Serves the page (one address per origin: s1.wirelab.test on the first …) until SIGINT/SIGTERM,
pushing with the root document per --push (h2, h2c, spdy3) and honouring clients' priorities.
Prints {"event":"ready",…} on stdout once every listener is up, {"event":"stopped",…} at the end.`

// serveReady is the ready line (and --ready-file content).
type serveReady struct {
	Event string `json:"event"`
	PID   int    `json:"pid"`
	server.Info
	DNS    string `json:"dns,omitempty"`
	Config struct {
		MaxConcurrentStreams int    `json:"max_concurrent_streams"`
		WriteChunkBytes      int    `json:"write_chunk_bytes"`
		TLSVersion           string `json:"tls_version"`
		SessionResumption    bool   `json:"session_resumption"`
		KeepAlive            bool   `json:"keep_alive"`
		Push                 string `json:"push"`
	} `json:"config"`
}

func runServe(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def := server.DefaultConfig()
	sv := seam.DefaultServe()
	sv.PortHTTP, sv.PortHTTPS, sv.PortQUIC, sv.MaxConcurrentStreams, sv.TLSVersion = def.PortHTTP, def.PortHTTPS, def.PortQUIC, def.MaxConcurrentStreams, def.TLSVersion
	sv.Bind(fs)
	pageName, seed, shards, shardMode := &sv.Page, &sv.Seed, &sv.Shards, &sv.ShardMode
	portHTTP, portHTTPS, portQUIC, mcs, chunk := &sv.PortHTTP, &sv.PortHTTPS, &sv.PortQUIC, &sv.MaxConcurrentStreams, &sv.WriteChunkBytes
	tlsVersion, resume, keepAlive, push := &sv.TLSVersion, &sv.SessionResumption, &sv.KeepAlive, &sv.Push
	certDir, certsFrom, readyFile, dnsAddr := &sv.CertDir, &sv.Certs, &sv.ReadyFile, &sv.DNS
	recordsFile, quicStats, connsFile := &sv.Records, &sv.QUICStats, &sv.Conns
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, serveUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return cli.Usagef("serve: %v", err)
	}
	if fs.NArg() != 0 {
		return cli.Usagef("serve: unexpected argument %q", fs.Arg(0))
	}
	if *pageName == "" {
		return cli.Usagef("serve: --page is required")
	}
	if len(sv.Addrs) == 0 {
		return cli.Usagef("serve: --addrs is required")
	}
	p, err := loadShardedPage(*pageName, *seed, *shards, *shardMode)
	if err != nil {
		return err
	}
	cfg := server.DefaultConfig()
	for i, a := range sv.Addrs {
		ip, err := netip.ParseAddr(strings.TrimSpace(a))
		if err != nil {
			return cli.Usagef("addrs[%d]: got %q; must be an IP address", i, a)
		}
		cfg.Addrs = append(cfg.Addrs, ip)
	}
	if cfg.Protocols, err = server.ParseProtocols(strings.Join(sv.Protocols, ",")); err != nil {
		return usageIfField(err)
	}
	if *mcs < server.MinConcurrentStreams || *mcs > server.MaxConcurrentStreams { // 0 would mean "default" in Config
		return usageIfField(fielderr.New("max_concurrent_streams", *mcs, "must be %d–%d", server.MinConcurrentStreams, server.MaxConcurrentStreams))
	}
	cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC = *portHTTP, *portHTTPS, *portQUIC
	cfg.MaxConcurrentStreams, cfg.WriteChunkBytes = *mcs, *chunk
	cfg.TLSVersion, cfg.SessionResumption, cfg.KeepAlive = *tlsVersion, *resume, *keepAlive
	cfg.CertDir = *certDir
	if *certsFrom != "" {
		if cfg.Certs, err = server.LoadCerts(*certsFrom); err != nil {
			return cli.Usagef("certs: %v", err)
		}
	}
	cfg.AltSvc = sv.AltSvc
	if len(sv.HTTPSALPN) > 0 && *dnsAddr == "" {
		return cli.Usagef("serve: --https-alpn goes with --dns")
	}
	if cfg.Push, err = server.ParsePushPolicy(*push); err != nil {
		return usageIfField(err)
	}
	if *quicStats {
		var mu sync.Mutex
		emit := func(event string, v any) { // one JSON line: {"event": event, v's fields…}
			b, _ := json.Marshal(v)
			line := append([]byte(`{"event":`+strconv.Quote(event)+`,`), b[1:]...)
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stdout, "%s\n", line)
		}
		cfg.OnQUICClosed = func(st server.QUICStats) { emit("quic_closed", st) }
		cfg.OnH2Closed = func(h server.H2Closed) { emit("h2_closed", h) }
	}

	ctx, stop := cli.SignalContext(ctx)
	defer stop()
	srv, err := server.Start(p, cfg)
	if err != nil {
		return usageIfField(err)
	}
	defer srv.Close()
	ready := serveReady{Event: "ready", PID: os.Getpid(), Info: srv.Info()}
	rc := srv.Config()
	ready.Config.MaxConcurrentStreams, ready.Config.WriteChunkBytes = rc.MaxConcurrentStreams, rc.WriteChunkBytes
	ready.Config.TLSVersion, ready.Config.SessionResumption, ready.Config.KeepAlive = rc.TLSVersion, rc.SessionResumption, rc.KeepAlive
	ready.Config.Push = rc.Push.String()
	if *dnsAddr != "" {
		d, err := dns.ListenRecords(*dnsAddr, dns.OriginZone(cfg.Addrs, sv.HTTPSALPN))
		if err != nil {
			return err
		}
		defer d.Close()
		ready.DNS = d.Addr()
	}
	line, err := json.Marshal(ready)
	if err != nil {
		return err
	}
	if *readyFile != "" {
		if err := atomicfile.WriteFile(*readyFile, append(line, '\n'), 0o600); err != nil {
			return err
		}
		defer os.Remove(*readyFile)
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
		return err
	}
	<-ctx.Done()
	// Close first: it waits for running handlers, so every request served is in the records.
	if err := srv.Close(); err != nil {
		return err
	}
	records, dropped := srv.Records()
	if *recordsFile != "" {
		if err := writeRecords(*recordsFile, records); err != nil {
			return err
		}
	}
	if *connsFile != "" {
		if err := writeRecords(*connsFile, srv.Conns()); err != nil {
			return err
		}
	}
	stopped, _ := json.Marshal(map[string]any{"event": "stopped", "requests": len(records), "records_dropped": dropped,
		"connections": len(srv.Conns())})
	_, err = fmt.Fprintf(stdout, "%s\n", stopped)
	return err
}

// writeRecords writes one JSON line per record.
func writeRecords[R any](path string, records []R) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
