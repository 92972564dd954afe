package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/bench"
	"github.com/wirelab/wirelab/engine/browser"
	"github.com/wirelab/wirelab/engine/client"
	"github.com/wirelab/wirelab/engine/internal/atomicfile"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/internal/version"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// Bringing pages in: pages record (Chromium + trace → dependency graph), pages import-har,
// pages mirror. Each writes a validated page JSON (--out, or stdout) and prints a one-line summary
// on stderr.

const pagesImportUsage = `usage: wirelab-engine pages record URL|DIR|NAME --out PAGE.json [--proto h2] [--seed 1] [--name N]
                                   [--resolve NAME=IP,...] [--spki H,...] [--cert FILE] [--base NAME]
                                   [--net PROFILE] [--timeout 120s] [--har FILE]
       wirelab-engine pages import-har FILE.har [--out PAGE.json] [--name N]
       wirelab-engine pages mirror DIR [--out PAGE.json] [--name N]

record loads the page in Chromium with tracing and writes the page model with the recorded
dependency graph. A DIR (a saved site, see mirror) or a page NAME (corpus, synthetic:…, page file)
is served by the built-in server on loopback for the recording and keeps its objects; a URL is a
page served elsewhere in the lab (give --resolve and --spki/--cert as for browse), whose objects
come from the load (or from --base NAME, the page the URL serves). --net PROFILE records a NAME
through an emulated path instead of loopback (root): the server in the server namespace, Chromium
in the client namespace resolving through the run's DNS server. import-har builds a page from a HAR file; mirror from a saved site directory
(files served as they are, references rewritten to the lab origins).`

func init() {
	pagesExtra["record"] = pagesRecord
	pagesExtra["import-har"] = pagesImportHAR
	pagesExtra["mirror"] = pagesMirror
}

func writePageOut(pg *page.Page, out string, stdout io.Writer) error {
	if out == "" || out == "-" {
		_, err := stdout.Write(pg.JSON())
		return err
	}
	if err := atomicfile.WriteFile(out, pg.JSON(), 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

func summarizePage(what string, pg *page.Page) {
	kinds := map[page.Kind]int{}
	compute := 0.0
	for _, a := range pg.Activities {
		kinds[a.Kind]++
		compute += a.DurationMs
	}
	fmt.Fprintf(os.Stderr, "%s: %s: %d objects, %d bytes, %d origins; %d activities (%d downloads, %d parse, %d evaluate; %.1f ms of computation)\n",
		what, cli.Printable(pg.Name), len(pg.Objects), pg.TotalBytes(), len(pg.Origins), len(pg.Activities),
		kinds[page.KindDownload], kinds[page.KindParse], kinds[page.KindEvaluate], compute)
}

func pagesMirror(args []string, stdout io.Writer) error {
	return pagesFromOne("mirror", "DIR", args, stdout, func(dir, name string) (*page.Page, []string, error) {
		res, err := page.Mirror(dir, name)
		if err != nil {
			return nil, nil, err
		}
		return res.Page, res.Missing, nil
	})
}

func pagesImportHAR(args []string, stdout io.Writer) error {
	return pagesFromOne("import-har", "FILE.har", args, stdout, func(file, name string) (*page.Page, []string, error) {
		pg, err := browser.ImportHAR(file, browser.RecordOptions{Name: name})
		return pg, nil, err
	})
}

// pagesFromOne is a `pages SUB` that makes a page from one input (what: its name in the usage
// line) with --out and --name: load makes it and lists the files it left out of the page.
func pagesFromOne(sub, what string, args []string, stdout io.Writer, load func(in, name string) (*page.Page, []string, error)) error {
	fs := flag.NewFlagSet("pages "+sub, flag.ContinueOnError)
	out := fs.String("out", "", "")
	name := fs.String("name", "", "")
	pos, err := pagesFlagSet(sub, fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) != 1 {
		return cli.Usagef("pages %s: want exactly one %s", sub, what)
	}
	if err := checkOutput("--out", *out); err != nil {
		return err
	}
	pg, missing, err := load(pos[0], *name)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	for _, m := range missing {
		fmt.Fprintf(os.Stderr, "pages %s: not in the directory, left as it is: %s\n", sub, cli.Printable(m))
	}
	if err := writePageOut(pg, *out, stdout); err != nil {
		return err
	}
	summarizePage("pages "+sub, pg)
	return nil
}

func pagesRecord(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pages record", flag.ContinueOnError)
	out := fs.String("out", "", "")
	name := fs.String("name", "", "")
	proto := fs.String("proto", "h2", "")
	seed := fs.Int64("seed", 1, "")
	resolve := fs.String("resolve", "", "")
	spki := fs.String("spki", "", "")
	certFile := fs.String("cert", "", "")
	harOut := fs.String("har", "", "")
	timeout := fs.Duration("timeout", browser.DefaultTimeout, "")
	baseName := fs.String("base", "", "")
	netProfile := fs.String("net", "", "")
	pos, err := pagesFlagSet("record", fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) != 1 {
		return cli.Usagef("pages record: want exactly one URL, DIR or page NAME")
	}
	if err := checkOutput("--out", *out); err != nil {
		return err
	}
	if err := checkOutput("--har", *harOut); err != nil {
		return err
	}
	p, err := browser.ParseProtocol(*proto)
	if err != nil {
		return cli.Usagef("--proto %v", err)
	}
	if *timeout <= 0 || *timeout > seam.MaxTimeout {
		return cli.Usagef("--timeout %v: must be > 0 and ≤ %v", *timeout, seam.MaxTimeout)
	}
	ctx, stop := cli.SignalContext(context.Background())
	defer stop()
	cfg := browser.Config{Protocol: p, Timeout: *timeout, Trace: true}
	arg := pos[0]
	opts := browser.RecordOptions{Name: *name}
	isURL := strings.HasPrefix(arg, "http://") || strings.HasPrefix(arg, "https://")
	if *netProfile != "" {
		if isURL {
			return cli.Usagef("--net: records a page NAME or DIR through an emulated path; a URL is loaded where it is")
		}
		return recordThroughPath(arg, *netProfile, *seed, p, *name, *out, *harOut, *timeout, stdout)
	}
	var url string
	if isURL {
		if err := checkFetchURL(arg, client.CheckTarget); err != nil {
			return err
		}
		if *baseName != "" {
			base, err := page.Load(*baseName, *seed)
			if err != nil {
				return usageIfField(err)
			}
			opts.Base = base
		}
		_, static, err := parseResolution("", *resolve)
		if err != nil {
			return err
		}
		cfg.Resolve = static
		if cfg.SPKIHashes, err = spkiHashes(*spki, *certFile); err != nil {
			return err
		}
		url = arg
		if opts.Base == nil {
			opts.Source = "recorded with Chromium from " + arg
		}
	} else {
		if *baseName != "" {
			return cli.Usagef("--base: only with a URL (a NAME or DIR is its own base)")
		}
		var base *page.Page
		if st, err := os.Stat(arg); err == nil && st.IsDir() {
			m, err := page.Mirror(arg, *name)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			for _, miss := range m.Missing {
				fmt.Fprintf(os.Stderr, "pages record: not in the directory, left as it is: %s\n", cli.Printable(miss))
			}
			base = m.Page
		} else {
			base, err = page.Load(arg, *seed)
			if err != nil {
				return usageIfField(err)
			}
		}
		srv, root, err := serveLoopback(base, p)
		if err != nil {
			return err
		}
		defer srv.Close()
		cfg.SPKIHashes = []string{srv.Certs().SPKIHash}
		cfg.Resolve = map[string]netip.Addr{}
		for i, a := range srv.Config().Addrs {
			cfg.Resolve[page.OriginHost(i)] = a
		}
		url, opts.Base = root, base
	}
	res, err := browser.Load(ctx, cfg, url)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if err := writeHAR(*harOut, res); err != nil {
		return err
	}
	if res.Err != nil {
		return fmt.Errorf("pages record: the load failed: %w", res.Err)
	}
	pg, err := browser.RecordPage(res, opts)
	if err != nil {
		return err
	}
	if opts.Base != nil {
		where := "on loopback"
		if isURL {
			where = "from " + arg
		}
		if v := os.Getenv(recordWhereEnv); v != "" {
			where = v
		}
		// A corpus page recorded again carries its previous recording's clause: replace it.
		if i := strings.Index(pg.Source, "; graph recorded with "); i >= 0 {
			pg.Source = pg.Source[:i]
		}
		pg.Source = strings.TrimSpace(pg.Source + "; graph recorded with " + res.Version + " over " + string(p) +
			" " + where + " by wirelab-engine " + version.String() + " on " + time.Now().UTC().Format("2006-01-02"))
	}
	if err := writePageOut(pg, *out, stdout); err != nil {
		return err
	}
	summarizePage("pages record", pg)
	return nil
}

// serveLoopback serves pg on 127.0.0.1…N (one address per origin) with protocol p on free ports
// and returns the root URL of a fresh load token.
func serveLoopback(pg *page.Page, p browser.Protocol) (*server.Server, string, error) {
	var addrs []netip.Addr
	for i := range pg.Origins {
		addrs = append(addrs, netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)}))
	}
	cfg := server.DefaultConfig(addrs...)
	cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC = 0, 0, 0
	cfg.Protocols = []server.Protocol{server.Protocol(p)}
	srv, err := server.Start(pg, cfg)
	if err != nil {
		return nil, "", fmt.Errorf("serve the page on loopback: %w", err)
	}
	root, err := srv.RootURL(server.Protocol(p), page.NewToken())
	if err != nil {
		srv.Close()
		return nil, "", err
	}
	return srv, root, nil
}

// recordWhereEnv tells a recording run inside an emulated path where it ran (for the provenance).
const recordWhereEnv = "WIRELAB_RECORD_WHERE"

// recordThroughPath records page name through an emulated path: the built-in server in the
// server namespace, `pages record URL --base NAME` in the client namespace.
func recordThroughPath(name, netProfile string, seed int64, p browser.Protocol, pageName, out, harOut string, timeout time.Duration, stdout io.Writer) error {
	if err := cli.NeedRoot("pages record --net"); err != nil {
		return err
	}
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return cli.Usagef("--net: record a mirrored DIR through a path by mirroring it first (pages mirror DIR --out PAGE.json) and recording PAGE.json")
	}
	if _, err := page.Load(name, seed); err != nil {
		return usageIfField(err)
	}
	if _, err := profile.Parse(netProfile); err != nil {
		return usageIfField(err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	abs := name
	if strings.ContainsAny(name, "/\\") || strings.HasSuffix(name, ".json") {
		if abs, err = filepath.Abs(name); err != nil {
			return err
		}
	}
	l, err := bench.StartLab(bench.LabConfig{Profile: netProfile, Page: abs, Seed: seed, Engine: self, Protocols: string(p),
		Env: []string{recordWhereEnv + "=through an emulated path (" + netProfile + ")"}})
	if err != nil {
		return err
	}
	defer l.Close()
	tmp, err := os.MkdirTemp("", "wirelab-record-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	args := []string{"pages", "record", bench.RootURL(string(p)), "--base", abs, "--seed", fmt.Sprint(seed), "--proto", string(p),
		"--spki", l.SPKIHash, "--timeout", timeout.String(), "--out", filepath.Join(tmp, "page.json")}
	if pageName != "" {
		args = append(args, "--name", pageName)
	}
	if harOut != "" {
		h, err := filepath.Abs(harOut)
		if err != nil {
			return err
		}
		args = append(args, "--har", h)
	}
	if _, err := l.RunEngine(args...); err != nil {
		return fmt.Errorf("pages record --net: %w", err)
	}
	pg, err := page.ReadFile(filepath.Join(tmp, "page.json"))
	if err != nil {
		return err
	}
	if err := writePageOut(pg, out, stdout); err != nil {
		return err
	}
	summarizePage("pages record", pg)
	return nil
}
