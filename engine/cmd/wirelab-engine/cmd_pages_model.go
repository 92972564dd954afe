package main

import (
	"encoding/json"
	"flag"
	"io"

	"github.com/wirelab/wirelab/engine/internal/cli"
)

// pages model: the facts an analytic model of a load needs (page.ModelFacts), one JSON line per
// page, for the control plane's prediction model (wirelab predict, docs/predict.md).

const pagesModelUsage = `       wirelab-engine pages model NAME... [--seed N] [--shards N] [--shard-mode M]
model prints one JSON line per NAME: each object's size, origin and type, the document a flat load
finds it in (found_by) and the dependency graph a replay follows (docs/predict.md).`

func init() {
	pagesExtra["model"] = pagesModel
}

func pagesModel(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("pages model", flag.ContinueOnError)
	seed := fs.Int64("seed", 1, "seed of the sizes and content")
	shards := fs.Int("shards", 1, "number of origins (1–64; 0 = one per group of --shard-mode tld or domain)")
	mode := fs.String("shard-mode", "round-robin", "round-robin, tld or domain")
	pos, err := pagesFlagSet("model", fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) == 0 {
		return cli.Usagef("pages model: want one or more page NAMEs")
	}
	enc := json.NewEncoder(w)
	for _, name := range pos {
		p, err := loadShardedPage(name, *seed, *shards, *mode)
		if err != nil {
			return err
		}
		if err := enc.Encode(p.Model()); err != nil {
			return err
		}
	}
	return nil
}
