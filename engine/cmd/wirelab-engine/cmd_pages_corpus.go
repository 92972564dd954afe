package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/atomicfile"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/userpath"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/pageimport"
)

// Corpora (docs/pages.md, "Generated corpora" and "Importing a corpus"): pages generate, pages
// profiles, pages import, and pages ls --corpus (cmd_pages.go).

const pagesCorpusUsage = `       wirelab-engine pages generate --like PROFILE --count N [--seed S] [--out DIR]
       wirelab-engine pages ls --corpus CORPUS
       wirelab-engine pages profiles [PROFILE] [--corpus CORPUS] [--markdown]
       wirelab-engine pages import DIR --out OUTDIR [--prefix P]

generate lists (or, with --out, writes as page JSON files) N pages whose distributions follow a
profile of published web figures (profiles: %s). A generated page needs no file: its name —
gen:PROFILE:SEED:COUNT:INDEX, or CORPUS:INDEX for a named corpus (%s) — is all the engine needs to
build it. ls --corpus lists a corpus's pages with their characteristics (objects, bytes, object-size
spread, domains, third-party share, depth, computation); CORPUS is a named corpus or
gen:PROFILE:SEED:COUNT. profiles compares a generated corpus (by default the profile's named corpus,
else seed 1 and 200 pages) with every figure the profile publishes, as JSON or as docs/pages.md's
Markdown table. import brings a directory of HAR files and mahimahi recording folders in: one page
JSON per page in OUTDIR, a JSON summary of what was imported and skipped (and why) on stdout; it
fails (exit 2) when no page was imported.`

func pagesCorpusUsageText() string {
	return fmt.Sprintf(pagesCorpusUsage, strings.Join(page.ProfileNames(), ", "), strings.Join(corpusNames(), ", "))
}

func init() {
	pagesExtra["generate"] = pagesGenerate
	pagesExtra["profiles"] = pagesProfiles
	pagesExtra["import"] = pagesImportDir
}

var genCorpusRE = regexp.MustCompile(`^gen:([a-z0-9.-]+):([0-9]+):([0-9]+)$`)

// corpusSpec resolves a CORPUS argument: a named corpus or gen:PROFILE:SEED:COUNT.
func corpusSpec(arg string) (page.CorpusSpec, error) {
	if m := genCorpusRE.FindStringSubmatch(arg); m != nil {
		seed, err1 := strconv.ParseInt(m[2], 10, 64)
		count, err2 := strconv.Atoi(m[3])
		if err1 != nil || err2 != nil {
			return page.CorpusSpec{}, cli.Usagef("--corpus %s: gen:PROFILE:SEED:COUNT takes whole numbers", arg)
		}
		spec, err := page.NewCorpusSpec(m[1], seed, count)
		return spec, usageIfField(err)
	}
	spec, err := page.LookupCorpus(arg)
	if err != nil {
		return spec, cli.Usagef("--corpus %s: must be a named corpus (%s) or gen:PROFILE:SEED:COUNT", arg, strings.Join(corpusNames(), ", "))
	}
	return spec, nil
}

func corpusNames() []string {
	var names []string
	for _, c := range page.NamedCorpora() {
		names = append(names, c.Name)
	}
	return names
}

// corpusListing is what `pages generate` and `pages ls --corpus` print.
type corpusListing struct {
	Corpus  string                 `json:"corpus"` // the name pages are listed under (web200, gen:…)
	Profile string                 `json:"profile"`
	Seed    int64                  `json:"seed"`
	Count   int                    `json:"count"`
	Pages   []page.Characteristics `json:"pages"`
	Summary map[string]any         `json:"summary"`
	Written []string               `json:"written,omitempty"`
}

func listCorpus(spec page.CorpusSpec) (*corpusListing, []*page.Page, error) {
	pages, err := spec.GenerateAll()
	if err != nil {
		return nil, nil, err
	}
	name := spec.Named
	if name == "" {
		name = fmt.Sprintf("gen:%s:%d:%d", spec.Profile.Name, spec.Seed, spec.Count)
	}
	l := &corpusListing{Corpus: name, Profile: spec.Profile.Name, Seed: spec.Seed, Count: spec.Count}
	cols := map[string][]float64{}
	for _, p := range pages {
		c := p.Characterize()
		l.Pages = append(l.Pages, c)
		for k, v := range map[string]float64{"objects": float64(c.Objects), "total_bytes": float64(c.TotalBytes),
			"object_bytes_p50": c.ObjectBytesP50, "domains": float64(c.Domains), "third_party_share": c.ThirdPartyShare,
			"depth": float64(c.Depth), "compute_ms": c.ComputeMs} {
			cols[k] = append(cols[k], v)
		}
	}
	l.Summary = map[string]any{}
	for k, v := range cols {
		sort.Float64s(v)
		l.Summary[k] = map[string]float64{"p10": page.Percentile(v, 10), "p50": page.Percentile(v, 50), "p90": page.Percentile(v, 90)}
	}
	return l, pages, nil
}

func pagesGenerate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pages generate", flag.ContinueOnError)
	like := fs.String("like", "", "")
	count := fs.Int("count", 0, "")
	seed := fs.Int64("seed", 1, "")
	out := fs.String("out", "", "")
	pos, err := pagesFlagSet("generate", fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) != 0 {
		return cli.Usagef("pages generate: unexpected argument %q", pos[0])
	}
	if *like == "" || *count == 0 {
		return cli.Usagef("pages generate: --like PROFILE and --count N are required (profiles: %s)", strings.Join(page.ProfileNames(), ", "))
	}
	spec, err := page.NewCorpusSpec(*like, *seed, *count)
	if err != nil {
		return usageIfField(err)
	}
	for _, c := range page.NamedCorpora() { // the named corpus's pages keep their short names
		if c.Profile == *like && c.Seed == *seed && c.Count == *count {
			spec, _ = page.LookupCorpus(c.Name)
		}
	}
	if err := checkOutputDir("--out", *out); err != nil { // before any work (docs/bad-input.md)
		return err
	}
	l, pages, err := listCorpus(spec)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return cli.Usagef("--out %s: %v", *out, err)
		}
		for _, p := range pages {
			file := filepath.Join(*out, pageimport.FileName(p))
			if err := atomicfile.WriteFile(file, p.JSON(), 0o644); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			l.Written = append(l.Written, file)
		}
	}
	return emitJSON(stdout, l)
}

func pagesProfiles(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pages profiles", flag.ContinueOnError)
	corpus := fs.String("corpus", "", "")
	markdown := fs.Bool("markdown", false, "")
	pos, err := pagesFlagSet("profiles", fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	names := page.ProfileNames()
	if len(pos) > 1 {
		return cli.Usagef("pages profiles: at most one PROFILE")
	}
	if len(pos) == 1 {
		if _, err := page.LookupProfile("profile", pos[0]); err != nil {
			return usageIfField(err)
		}
		names = pos
	}
	type report struct {
		Profile     string            `json:"profile"`
		Description string            `json:"description"`
		Corpus      string            `json:"corpus"`
		Tolerance   float64           `json:"tolerance"`
		Sources     map[string]string `json:"sources"`
		Rows        []page.ProfileRow `json:"rows"`
	}
	var reports []report
	for _, name := range names {
		prof, _ := page.LookupProfile("profile", name)
		spec, corpusName := page.CorpusSpec{}, ""
		switch {
		case *corpus != "":
			if spec, err = corpusSpec(*corpus); err != nil {
				return err
			}
			if spec.Profile != prof {
				return cli.Usagef("--corpus %s: is generated like %s, not %s", *corpus, spec.Profile.Name, name)
			}
			corpusName = *corpus
		default:
			spec, _ = page.NewCorpusSpec(name, 1, 200)
			corpusName = fmt.Sprintf("gen:%s:1:200", name)
			for _, c := range page.NamedCorpora() {
				if c.Profile == name {
					spec, _ = page.LookupCorpus(c.Name)
					corpusName = c.Name
				}
			}
		}
		pages, err := spec.GenerateAll()
		if err != nil {
			return err
		}
		reports = append(reports, report{Profile: name, Description: prof.Description, Corpus: corpusName,
			Tolerance: page.Tolerance, Sources: prof.Sources, Rows: page.ProfileRows(prof, pages)})
	}
	if !*markdown {
		return emitJSON(stdout, reports)
	}
	for _, r := range reports {
		fmt.Fprintf(stdout, "#### `%s` (corpus `%s`)\n\n%s.\n\n", r.Profile, r.Corpus, r.Description)
		fmt.Fprintf(stdout, "| metric | statistic | published | source | generated | deviation |\n|---|---|---|---|---|---|\n")
		for _, row := range r.Rows {
			unit := map[string]string{"KB": " KB", "count": "", "share": ""}[row.Unit]
			fmt.Fprintf(stdout, "| %s | %s | %s%s | %s%s | %s%s | %+.1f %% |\n", row.Metric, row.Stat, num(row.Published), unit,
				row.Source, figure(row.Figure), num(row.Generated), unit, 100*row.Deviation)
		}
		fmt.Fprintln(stdout)
		var keys []string
		for k := range r.Sources {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(stdout, "- `%s`: %s\n", k, r.Sources[k])
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

func figure(f string) string {
	if f == "" {
		return ""
	}
	return ", “" + f + "”"
}

func num(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) < 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func pagesImportDir(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pages import", flag.ContinueOnError)
	out := fs.String("out", "", "")
	prefix := fs.String("prefix", "", "")
	pos, err := pagesFlagSet("import", fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) != 1 || *out == "" {
		return cli.Usagef("pages import: want exactly one DIR and --out OUTDIR")
	}
	// the corpus directory, and the output directory before any work (docs/bad-input.md)
	if err := userpath.Dir(pos[0]); err != nil {
		return userpath.Flag("pages import DIR", err)
	}
	if err := checkOutputDir("--out", *out); err != nil {
		return err
	}
	res, err := pageimport.Dir(pos[0], *prefix)
	if err != nil {
		return cli.Usagef("pages import: %s: %v", pos[0], err)
	}
	if len(res.Imported) > 0 {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return cli.Usagef("--out %s: %v", *out, err)
		}
	}
	type written struct {
		pageimport.Imported
		Name       string `json:"name"`
		File       string `json:"file"`
		Objects    int    `json:"objects"`
		TotalBytes int64  `json:"total_bytes"`
		Activities int    `json:"activities"`
	}
	summary := struct {
		Imported []written            `json:"imported"`
		Skipped  []pageimport.Skipped `json:"skipped"`
	}{Imported: []written{}, Skipped: res.Skipped}
	for _, im := range res.Imported {
		file := filepath.Join(*out, pageimport.FileName(im.Page))
		if err := atomicfile.WriteFile(file, im.Page.JSON(), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		summary.Imported = append(summary.Imported, written{Imported: im, Name: im.Page.Name, File: file,
			Objects: len(im.Page.Objects), TotalBytes: im.Page.TotalBytes(), Activities: len(im.Page.Activities)})
	}
	if err := emitJSON(stdout, summary); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "pages import: %d imported, %d skipped\n", len(res.Imported), len(res.Skipped))
	if len(res.Imported) == 0 {
		first := "the directory is empty"
		if len(res.Skipped) > 0 {
			first = res.Skipped[0].Entry + ": " + res.Skipped[0].Reason
		}
		return cli.Usagef("pages import: no page imported from %s: %d entries skipped; first: %s", pos[0], len(res.Skipped), first)
	}
	return nil
}
