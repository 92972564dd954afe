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

// WriteTable prints the report for a person: one line per flow, then the gap between them.
func WriteTable(w io.Writer, r *Report) {
	fmt.Fprintf(w, "TCP+ backoff after one loss: n=%d, bottleneck %.1f Mbit/s, one segment dropped on the router at cwnd ≥ %d (kernel %s)\n\n",
		r.Config.N, float64(r.Config.RateBitsPerSecond)/1e6, r.Config.ArmCwnd, r.Kernel)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cc\tβ\tcwnd before\tssthresh after\texpected\tcwnd after\tssthresh/cwnd\tretrans\tcheck")
	for _, f := range r.Flows {
		check := "pass"
		if !f.Pass {
			check = "FAIL: " + strings.Join(f.Problems, "; ")
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%d (%s)\t%d\t%d..%d\t%d\t%.3f\t%d\t%s\n",
			f.CC, f.Beta, f.CwndBefore, f.StateBefore, f.SsthreshAfter, f.ExpectedSsthreshMin, f.ExpectedSsthreshMax,
			f.CwndAfter, f.SsthreshRatio, f.TotalRetrans, check)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nssthresh/cwnd gap TCP+ − cubic: %.3f (formula β' − β = %.3f)\n", r.RatioGap, r.ExpectedRatioGap)
}
