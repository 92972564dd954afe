package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/tcpplus"
	"github.com/wirelab/wirelab/engine/tcpplus/backoff"
)

func benchTCPPlus(args []string) error {
	fs := flag.NewFlagSet("bench tcpplus", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	n := fs.Int("n", tcpplus.DefaultN, "connections TCP+ stands for (1..32)")
	rate := fs.String("rate", "30mbit", "bottleneck rate on the router (bit, kbit, mbit, gbit)")
	cwnd := fs.Uint("cwnd", 100, "sender cwnd (segments) at which the router drops one segment (20..2000)")
	timeout := fs.Duration("timeout", 30*time.Second, "time limit per flow (1s–10m)")
	if err := fs.Parse(args); err != nil {
		return cli.Usagef("bench tcpplus: %v (flags: --json --n --rate --cwnd --timeout)", err)
	}
	if err := tcpplus.CheckN(*n); err != nil {
		return cli.Usagef("bench tcpplus: --n: %v", err)
	}
	bps, err := parseRate(*rate)
	if err != nil {
		return cli.Usagef("bench tcpplus: --rate %q: %v", *rate, err)
	}
	if *timeout < time.Second || *timeout > 10*time.Minute {
		return cli.Usagef("bench tcpplus: --timeout %v: must be between 1s and 10m", *timeout)
	}
	if *cwnd < 20 || *cwnd > 2000 {
		return cli.Usagef("bench tcpplus: --cwnd %d: must be between 20 and 2000", *cwnd)
	}
	ctx, stop := cli.SignalContext(context.Background())
	defer stop()
	rep, err := backoff.Run(ctx, backoff.Config{N: *n, RateBitsPerSecond: bps, ArmCwnd: uint32(*cwnd), Timeout: *timeout, Progress: os.Stderr})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		backoff.WriteTable(os.Stdout, rep)
	}
	if !rep.Pass {
		return fmt.Errorf("bench tcpplus: the backoff does not match the formula: %s", rep.Problems())
	}
	return nil
}

// parseRate reads a rate such as 30mbit (units as in the profile grammar).
func parseRate(s string) (uint64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(strings.ToLower(s), u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("want a positive number before %q", u.suffix)
			}
			return uint64(v * u.mult), nil
		}
	}
	return 0, fmt.Errorf("want a number and a unit: bit, kbit, mbit or gbit")
}
