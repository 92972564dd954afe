package backoff

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Problems joins the problems of every flow into one line ("" when the report passes).
func (r *Report) Problems() string {
	var all []string
	for _, f := range r.Flows {
		for _, p := range f.Problems {
			all = append(all, f.CC+": "+p)
		}
	}
	return strings.Join(all, "; ")
}

// WriteTable prints the report for a person: the backoff at the first loss per flow, the fast
// convergence at the second, the gap between the flows and any problems.
func WriteTable(w io.Writer, r *Report) {
	fmt.Fprintf(w, "TCP+ backoff: n=%d, bottleneck %.1f Mbit/s, one segment dropped on the router at cwnd ≥ %d, a second right after recovery (kernel %s)\n\n",
		r.Config.N, float64(r.Config.RateBitsPerSecond)/1e6, r.Config.ArmCwnd, r.Kernel)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "first loss\tβ\tcwnd at loss\tTCP_INFO cwnd before\tssthresh after\texpected\tcwnd after\tssthresh/cwnd\tcheck")
	for _, f := range r.Flows {
		fmt.Fprintf(tw, "%s\t%.4f\t%d\t%d (%s)\t%d\t%d\t%d\t%.3f\t%s\n",
			f.CC, f.Beta, f.CwndBefore, f.SampledCwndBefore, f.SampledStateBefore, f.SsthreshAfter, f.ExpectedSsthresh,
			f.CwndAfter, f.SsthreshRatio, passWord(f.Pass))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "second loss\tW_max before\tcwnd at loss\tssthresh after\texpected\tW_max after\texpected\tW_max/cwnd")
	for _, f := range r.Flows {
		fc := f.FastConvergence
		ratio := 0.0
		if fc.CwndBefore > 0 {
			ratio = float64(fc.Wmax) / float64(fc.CwndBefore)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\n",
			f.CC, fc.WmaxAfterFirst, fc.CwndBefore, fc.SsthreshAfter, fc.ExpectedSsthresh, fc.Wmax, fc.ExpectedWmax, ratio)
	}
	tw.Flush()
	for _, f := range r.Flows {
		for _, d := range f.Discarded {
			fmt.Fprintf(w, "\ndiscarded %s %s", f.CC, d)
		}
	}
	fmt.Fprintf(w, "\nssthresh/cwnd gap TCP+ − cubic: %.3f (formula β' − β = %.3f)\n", r.RatioGap, r.ExpectedRatioGap)
	for _, f := range r.Flows {
		for _, p := range f.Problems {
			fmt.Fprintf(w, "FAIL %s: %s\n", f.CC, p)
		}
	}
}

func passWord(pass bool) string {
	if pass {
		return "pass"
	}
	return "FAIL"
}
