package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/units"
	"github.com/wirelab/wirelab/engine/page"
)

func init() {
	register("pages", command{
		Runs:    true,
		Summary: "list, show, validate, generate, record, import pages (pages ls|show|urls|schema|validate|model|generate|profiles|record|import|import-har|mirror)",
		Run:     runPages,
	})
}

var pagesUsage = `usage: wirelab-engine pages ls [--seed N] [--corpus CORPUS]
       wirelab-engine pages show NAME [--seed N] [--shards N] [--shard-mode round-robin|tld|domain] [--graph structural]
       wirelab-engine pages urls NAME --token T [--scheme https] [--port P] [--seed N] [--shards N] [--shard-mode M]
       wirelab-engine pages schema
       wirelab-engine pages validate FILE
NAME is a corpus page (twitter, youtube, imgur, nytimes, flags, neoload50, unh100), a synthetic
page (synthetic:64x10kB), a generated corpus's page (web200:17, gen:PROFILE:SEED:COUNT:INDEX) or a
page JSON file. Output is JSON on stdout.
` + pagesCorpusUsageText() + `

` + pagesImportUsage + "\n" + pagesModelUsage

// pagesExtra are the subcommands that bring pages in (cmd_pages_import.go).
var pagesExtra = map[string]func(args []string, stdout io.Writer) error{}

func runPages(args []string) error {
	if len(args) == 0 {
		return cli.Usagef("pages: missing subcommand; want ls, show, urls, schema, validate, model, generate, profiles, record, import, import-har or mirror (pages --help)")
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "ls":
		return pagesLs(rest, os.Stdout)
	case "show":
		return pagesShow(rest, os.Stdout, false)
	case "urls":
		return pagesShow(rest, os.Stdout, true)
	case "schema":
		if len(rest) != 0 {
			return cli.Usagef("pages schema: takes no arguments")
		}
		_, err := os.Stdout.Write(page.Schema)
		return err
	case "validate":
		if len(rest) != 1 {
			return cli.Usagef("pages validate: want exactly one FILE")
		}
		return pagesValidate(rest[0], os.Stdout)
	case "-h", "--help", "help":
		fmt.Println(pagesUsage)
		return nil
	}
	if f, ok := pagesExtra[sub]; ok {
		return f(rest, os.Stdout)
	}
	return cli.Usagef("pages: unknown subcommand %q; want ls, show, urls, schema, validate, model, generate, profiles, record, import, import-har or mirror", sub)
}

// pagesFlagSet parses flags after (or before) positional arguments and maps errors to usage errors.
func pagesFlagSet(name string, fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Println(pagesUsage)
				return nil, errPagesHelp
			}
			return nil, cli.Usagef("pages %s: %v", name, err)
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

var errPagesHelp = errors.New("help shown")

func emitJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// usageIfField turns a field error into a usage error (exit 2).
func usageIfField(err error) error {
	if fe, ok := fielderr.As(err); ok {
		return cli.Usagef("%s", fe.Error())
	}
	return err
}

func pagesLs(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("pages ls", flag.ContinueOnError)
	seed := fs.Int64("seed", 1, "seed of the corpus sizes")
	corpus := fs.String("corpus", "", "a generated corpus to list")
	pos, err := pagesFlagSet("ls", fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) != 0 {
		return cli.Usagef("pages ls: unexpected argument %q", pos[0])
	}
	if *corpus != "" {
		spec, err := corpusSpec(*corpus)
		if err != nil {
			return err
		}
		l, _, err := listCorpus(spec)
		if err != nil {
			return err
		}
		return emitJSON(w, l)
	}
	ls, err := pagesListing(*seed)
	if err != nil {
		return usageIfField(err)
	}
	return emitJSON(w, ls)
}

// corpusEntry is one corpus page in `pages ls`: its summary and the origins it is served from with
// shards = 0 in each grouped shard mode (one origin per top-level-domain group, per domain).
type corpusEntry struct {
	page.Summary
	ShardOrigins map[page.ShardMode]int `json:"shard_origins"`
}

// pagesListing is the output of `pages ls`.
func pagesListing(seed int64) (map[string]any, error) {
	var out []corpusEntry
	for _, name := range page.CorpusNames() {
		p, err := page.Corpus(name, seed)
		if err != nil {
			return nil, err
		}
		e := corpusEntry{Summary: p.Summarize(), ShardOrigins: map[page.ShardMode]int{}}
		for _, mode := range []page.ShardMode{page.ShardTLD, page.ShardDomain} {
			sharded, err := p.Shard(0, mode)
			if err != nil {
				return nil, fmt.Errorf("%s with shards 0 in mode %s: %w", name, mode, err)
			}
			e.ShardOrigins[mode] = len(sharded.Origins)
		}
		out = append(out, e)
	}
	// The named corpora with their pages' mean object count and bytes (what a duration estimate needs).
	type namedCorpus struct {
		page.NamedCorpus
		MeanObjects float64 `json:"mean_objects"`
		MeanBytes   float64 `json:"mean_bytes"`
	}
	var corpora []namedCorpus
	for _, c := range page.NamedCorpora() {
		spec, err := page.LookupCorpus(c.Name)
		if err != nil {
			return nil, err
		}
		pages, err := spec.GenerateAll()
		if err != nil {
			return nil, err
		}
		n := namedCorpus{NamedCorpus: c}
		for _, p := range pages {
			n.MeanObjects += float64(len(p.Objects)) / float64(len(pages))
			n.MeanBytes += float64(p.TotalBytes()) / float64(len(pages))
		}
		n.MeanObjects, n.MeanBytes = math.Round(n.MeanObjects*10)/10, math.Round(n.MeanBytes)
		corpora = append(corpora, n)
	}
	return map[string]any{
		"corpus": out,
		"generated": map[string]any{
			"corpora":  corpora,
			"profiles": page.ProfileNames(),
			"page":     "CORPUS:INDEX (web200:17, 1-based) or gen:PROFILE:SEED:COUNT:INDEX",
		},
		"synthetic": "synthetic:NxS[,html=SIZE] — N PNG images of S bytes (a SIZE: units " + strings.Join(units.Names(units.Sizes), ", ") + ")",
		"w_grid":    page.WGrid(),
	}, nil
}

func helpIsSuccess(err error) error {
	if errors.Is(err, errPagesHelp) {
		return nil
	}
	return err
}

func pagesShow(args []string, w io.Writer, urls bool) error {
	name := "show"
	if urls {
		name = "urls"
	}
	fs := flag.NewFlagSet("pages "+name, flag.ContinueOnError)
	seed := fs.Int64("seed", 1, "seed of the sizes and content")
	shards := fs.Int("shards", 1, "number of origins (1–64)")
	mode := fs.String("shard-mode", "round-robin", "round-robin, tld or domain")
	token := fs.String("token", "", "load token (urls)")
	scheme := fs.String("scheme", "https", "http or https (urls)")
	port := fs.Int("port", 0, "port in the URLs (urls; 0 = the scheme's default)")
	graph := fs.String("graph", "", "show: structural = replace the page's graph with page.BuildGraph's (e.g. for push by dependency level)")
	pos, err := pagesFlagSet(name, fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) != 1 {
		return cli.Usagef("pages %s: want exactly one page NAME", name)
	}
	p, err := loadShardedPage(pos[0], *seed, *shards, *mode)
	if err != nil {
		return err
	}
	switch *graph {
	case "":
	case "structural":
		p.Activities = page.BuildGraph(p)
	default:
		return cli.Usagef("--graph %s: allowed: structural (the page's own graph is shown without --graph)", *graph)
	}
	if !urls {
		_, err = w.Write(p.JSON())
		return err
	}
	if *token == "" {
		*token = page.NewToken()
	}
	list, err := p.URLsAt(page.Base{Scheme: *scheme, Port: *port, Token: *token})
	if err != nil {
		return usageIfField(err)
	}
	return emitJSON(w, list)
}

// loadShardedPage resolves a page name and applies sharding (shards 1 with round-robin: as is).
func loadShardedPage(name string, seed int64, shards int, modeName string) (*page.Page, error) {
	mode, err := page.ParseShardMode(modeName)
	if err != nil {
		return nil, usageIfField(err)
	}
	p, err := page.Load(name, seed)
	if err != nil {
		return nil, usageIfField(fielderr.Prefix(pagePrefix(name, err), err))
	}
	if shards == 1 && mode == page.ShardRoundRobin && len(p.Origins) == 1 {
		return p, nil
	}
	p, err = p.Shard(shards, mode)
	if err != nil {
		return nil, usageIfField(err)
	}
	return p, nil
}

// pagePrefix prefixes field paths inside a page file with the file name (an error of the file as
// a whole, field "page", names it already).
func pagePrefix(name string, err error) string {
	if fe, ok := fielderr.As(err); page.IsSynthetic(name) || (ok && fe.Field == "page") {
		return ""
	}
	if _, err := os.Stat(name); err == nil {
		return name + ": "
	}
	return ""
}

func pagesValidate(path string, w io.Writer) error {
	p, err := page.ReadFile(path)
	if err != nil {
		if _, ok := fielderr.As(err); ok {
			return usageIfField(fielderr.Prefix(pagePrefix(path, err), err))
		}
		return cli.Usagef("%v", err)
	}
	return emitJSON(w, map[string]any{"valid": true, "name": p.Name, "objects": len(p.Objects),
		"total_bytes": p.TotalBytes(), "origins": len(p.Origins), "activities": len(p.Activities)})
}
