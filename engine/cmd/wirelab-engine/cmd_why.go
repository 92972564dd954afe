package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/trial"
	"github.com/wirelab/wirelab/engine/why"
)

const whyUsage = `usage: wirelab-engine why FILE…
Decomposes again a load whose decomposition input a trial wrote (run the trial with
WIRELAB_WHY_DUMP=DIR in its environment: one FILE per load) and prints its critical path — each
piece of the load's time on the wire with the part it was charged to and the request it belongs
to — then the parts (docs/why.md). For looking into a decomposition.`

func init() {
	register("why", command{
		Summary: "print the critical path of a load from its decomposition input (WIRELAB_WHY_DUMP)",
		Run:     func(args []string) error { return runWhy(args, os.Stdout) },
	})
}

func runWhy(args []string, w io.Writer) error {
	if len(args) == 0 {
		return cli.Usagef("why: a FILE written under WIRELAB_WHY_DUMP is needed (why --help)")
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(w, whyUsage)
		return nil
	}
	for _, path := range args {
		d, err := trial.ReadWhyDump(path)
		if err != nil {
			return cli.Usagef("why: %v", err)
		}
		in := d.Input
		res := why.Decompose(in)
		fmt.Fprintf(w, "%s (%s): %.3f ms from the first packet\n", path, d.Network, float64(in.End-in.Start)/1e6)
		for _, s := range res.Path {
			url := ""
			if s.Request >= 0 && s.Request < len(in.Timeline.Requests) {
				url = in.Timeline.Requests[s.Request].URL
			}
			fmt.Fprintf(w, "  %10.3f %10.3f  %-16s %3d %s\n", ms(s.From-in.Start), ms(s.To-in.Start), why.Defs[s.Part].Key, s.Request, url)
		}
		for p, v := range res.Parts {
			if v != 0 {
				fmt.Fprintf(w, "  %-16s %10.3f ms\n", why.Defs[p].Key, v)
			}
		}
		fmt.Fprintf(w, "  retransmissions: %+v\n", res.Retx)
		for _, x := range res.Retransmissions {
			p := in.Packets[x.Rec]
			fmt.Fprintf(w, "    %10.3f %d.%d.%d.%d:%d > %d.%d.%d.%d:%d seq %d+%d  %-8s dupacks %d, %.1f ms since the last send or advance, RTO %.1f ms\n",
				ms(x.At-in.Start), p.Src[0], p.Src[1], p.Src[2], p.Src[3], p.SrcPort, p.Dst[0], p.Dst[1], p.Dst[2], p.Dst[3], p.DstPort,
				x.Seq, x.Len, x.Kind, x.Dupacks, ms(x.SinceLast), ms(x.RTO))
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
