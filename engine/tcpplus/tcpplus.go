// Package tcpplus makes one TCP connection behave like n parallel ones: TCP+ from study W
// ("How Speedy is SPDY?", NSDI 2014). A browser opens up to six HTTP/1.1 connections per origin
// where SPDY/HTTP/2 opens one; TCP+ gives the single connection the aggregate behaviour of n:
//
//   - initial congestion window × n and initial receive window × n: route attributes
//     (initcwnd, initrwnd) that the topology sets; RouteWindows computes them;
//   - on loss, a multiplicative decrease of β' = 1 − (1 − β)/n instead of cubic's β
//     (β ≈ 0.7 → β' ≈ 0.95 for n = 6): a BPF struct_ops congestion control named Name(n)
//     ("wl_cubicp6") that is the kernel's own cubic except for that decrease. Register loads
//     it; the registration is global to the kernel and shared, reference-counted, by every run
//     on the machine that asks for the same n. GC removes what crashed runs left behind.
//
// docs/tcpplus.md explains the mechanism, what β' touches and why, and the measured figures.
package tcpplus

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

const (
	// MaxN is the largest number of connections TCP+ can emulate.
	MaxN = 32
	// DefaultN is the study's n: browsers open six connections per origin.
	DefaultN = 6
	// KernelInitWindow is the kernel's initial congestion window (TCP_INIT_CWND) and the initial
	// receive window it advertises (TCP_DEFAULT_INIT_RCVWND), in segments, used when a route
	// sets no initcwnd/initrwnd.
	KernelInitWindow = 10

	// BetaScale is cubic's fixed-point scale for β (BICTCP_BETA_SCALE).
	BetaScale = 1024
	// DefaultCubicBeta is cubic's β × BetaScale when its module parameter cannot be read.
	DefaultCubicBeta = 717

	namePrefix = "wl_cubicp"
	// caNameMax is TCP_CA_NAME_MAX: a congestion control's name, with its NUL, fits in 16 bytes.
	caNameMax = 16

	cubicBetaParam = "/sys/module/tcp_cubic/parameters/beta"
)

// CheckN validates n, the number of connections one TCP+ connection stands for.
func CheckN(n int) error {
	if n < 1 || n > MaxN {
		return fmt.Errorf("tcpplus: n = %d: must be between 1 and %d", n, MaxN)
	}
	return nil
}

// Name is the name of the congestion control that backs off like n cubic connections, as given
// to TCP_CONGESTION or a route's congctl. n must satisfy CheckN.
func Name(n int) string { return namePrefix + strconv.Itoa(n) }

// ParseName is the inverse of Name: it reports the n of a TCP+ congestion control's name.
func ParseName(name string) (n int, ok bool) {
	digits, found := strings.CutPrefix(name, namePrefix)
	if !found || digits == "" || digits[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || CheckN(n) != nil {
		return 0, false
	}
	return n, true
}

// BetaPlus is the multiplicative decrease of n flows of which one backs off by beta:
// β' = 1 − (1 − β)/n. The aggregate window W = Σ Wᵢ of n equal flows loses (1 − β)·W/n.
func BetaPlus(beta float64, n int) float64 { return 1 - (1-beta)/float64(n) }

// BetaPlusScaled is BetaPlus in cubic's fixed point: BetaScale − (BetaScale − beta)/n, rounded
// to the nearest integer, for beta given × BetaScale. BetaPlusScaled(beta, 1) == beta, which is
// what makes TCP+ with n = 1 plain cubic. n must satisfy CheckN and 0 < beta ≤ BetaScale.
func BetaPlusScaled(beta uint32, n int) uint32 {
	gap := uint32(BetaScale) - beta
	return BetaScale - (2*gap+uint32(n))/(2*uint32(n))
}

// CubicBeta is the β the running kernel's cubic uses, × BetaScale (its module parameter "beta",
// 717 unless someone changed it).
func CubicBeta() (uint32, error) {
	raw, err := os.ReadFile(cubicBetaParam)
	if err != nil {
		return 0, fmt.Errorf("tcpplus: reading cubic's beta: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 32)
	if err != nil || v == 0 || v > BetaScale {
		return 0, fmt.Errorf("tcpplus: cubic's beta %q in %s: want 1..%d", strings.TrimSpace(string(raw)), cubicBetaParam, BetaScale)
	}
	return uint32(v), nil
}

// cubicBetaOrDefault is CubicBeta, falling back to the kernel's compiled-in default.
func cubicBetaOrDefault() uint32 {
	b, err := CubicBeta()
	if err != nil {
		return DefaultCubicBeta
	}
	return b
}

// RouteWindows is the (initcwnd, initrwnd) pair, in segments, of a route carrying TCP+ for n
// connections: each window × n. A window ≤ 0 means the kernel's default (KernelInitWindow), so
// RouteWindows(0, 0, 6) = (60, 60). The results are meant for `ip route … initcwnd W initrwnd R`.
// n outside 1..MaxN is a programming error (validate it at the edge with CheckN) and panics.
func RouteWindows(iw, irw, n int) (int, int) {
	if err := CheckN(n); err != nil {
		panic(err)
	}
	if iw <= 0 {
		iw = KernelInitWindow
	}
	if irw <= 0 {
		irw = KernelInitWindow
	}
	return iw * n, irw * n
}

// ExpectedSsthresh is the slow-start threshold a cubic-family congestion control with
// multiplicative decrease beta (× BetaScale) sets when it detects a loss at congestion window
// cwnd: max(⌊cwnd·beta/BetaScale⌋, 2) segments, as tcp_cubic and wl_cubicp compute it.
func ExpectedSsthresh(cwnd, beta uint32) uint32 {
	s := uint64(cwnd) * uint64(beta) / BetaScale
	return uint32(max(s, 2))
}

// FastConvergenceWmax is the W_max (cubic's last_max_cwnd) that a cubic-family congestion
// control with multiplicative decrease beta (× BetaScale) records when a loss at cwnd comes
// before cwnd has regained the previous W_max ("fast convergence"): ⌊cwnd·(1 + β)/2⌋, half way
// between the reduced window and cwnd. For a first loss, or one above the previous W_max, it
// records cwnd itself.
func FastConvergenceWmax(cwnd, beta uint32) uint32 {
	return uint32(uint64(cwnd) * uint64(BetaScale+beta) / (2 * BetaScale))
}
