// Package backoff measures that TCP+ really changes how TCP backs off: on a path of three
// namespaces (sender ⇄ router ⇄ receiver, the router rate-limiting towards the receiver), it
// runs one bulk flow with plain cubic and one with TCP+ for n connections, drops exactly one
// data segment of each on the router once the sender's cwnd has reached a threshold, reads the
// sender's TCP_INFO throughout, and checks the reduction against the formula: ssthresh =
// ⌊cwnd·β⌋ for cubic, ⌊cwnd·β'⌋ for TCP+, β' = 1 − (1 − β)/n. Needs root.
package backoff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf/rlimit"

	"github.com/wirelab/wirelab/engine/tcpplus"
	"github.com/wirelab/wirelab/engine/tcpplus/internal/nspath"
)

// Config is one measurement. The zero value of each field means its default.
type Config struct {
	// N is the number of connections TCP+ stands for. Default tcpplus.DefaultN (6).
	N int `json:"n"`
	// RateBitsPerSecond is the bottleneck rate on the router's egress. Default 30 Mbit/s: slow
	// enough that a busy sampler reads TCP_INFO many times per packet, fast enough that cwnd
	// reaches ArmCwnd in about a second.
	RateBitsPerSecond uint64 `json:"rate_bps"`
	// ArmCwnd is the sender's cwnd, in segments, at which the router drops one segment.
	// Default 100: large enough that ⌊cwnd·β⌋ resolves β to 1 %.
	ArmCwnd uint32 `json:"arm_cwnd"`
	// Timeout bounds each flow. Default 30 s.
	Timeout time.Duration `json:"timeout_ns"`
	// Port is the receiver's TCP port. Default 5001.
	Port uint16 `json:"port"`
	// Progress, if set, gets one line as each stage starts ("path … ready", "measuring cubic").
	Progress io.Writer `json:"-"`
}

func (c *Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}

func (c *Config) fill() error {
	if c.N == 0 {
		c.N = tcpplus.DefaultN
	}
	if err := tcpplus.CheckN(c.N); err != nil {
		return err
	}
	if c.RateBitsPerSecond == 0 {
		c.RateBitsPerSecond = 30_000_000
	}
	if c.RateBitsPerSecond < 1_000_000 {
		return fmt.Errorf("backoff: rate %d bit/s: must be at least 1 Mbit/s", c.RateBitsPerSecond)
	}
	if c.ArmCwnd == 0 {
		c.ArmCwnd = 100
	}
	if c.ArmCwnd < 20 || c.ArmCwnd > 2000 {
		return fmt.Errorf("backoff: cwnd to arm at %d: must be between 20 and 2000 segments", c.ArmCwnd)
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.Port == 0 {
		c.Port = 5001
	}
	return nil
}

// MaxAttempts bounds how often Run measures one congestion control. A flow in which the
// kernel took a reduction back as spurious (Flow.Undos: a timestamp or DSACK said the dropped
// segment was only delayed — which a loaded machine's late ACKs can suggest) measured no
// backoff, so Run discards it and measures again; the last attempt is reported whatever it
// shows, with the discarded ones in Flow.Discarded.
const MaxAttempts = 3

// Report is the result of Run.
type Report struct {
	Config Config `json:"config"`
	Kernel string `json:"kernel"`
	// Flows: plain cubic first, then TCP+.
	Flows []Flow `json:"flows"`
	// RatioGap is TCP+'s ssthresh ratio minus cubic's; the formula says β' − β.
	RatioGap         float64 `json:"ratio_gap"`
	ExpectedRatioGap float64 `json:"expected_ratio_gap"`
	Pass             bool    `json:"pass"`
}

// Run builds the path, measures cubic and TCP+ (registering it for cfg.N for the duration),
// and removes everything it created — also when ctx is cancelled. An error means the
// measurement could not be made; a made measurement that disagrees with the formula is a
// Report with Pass false and the reasons in each Flow's Problems.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("backoff: needs root (namespaces, a BPF congestion control and a tc program)")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("backoff: %w", err)
	}
	cubicBeta, err := tcpplus.CubicBeta()
	if err != nil {
		return nil, err
	}
	name, unregister, err := tcpplus.Register(cfg.N)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, unregister()) }()

	path, err := nspath.New(ctx, nspath.Config{RateBitsPerSecond: cfg.RateBitsPerSecond, StateDir: tcpplus.StateDir})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, path.Close()) }()
	if err := classicLossDetection(path); err != nil {
		return nil, err
	}
	drop, err := attachDropper(path, cfg.Port)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, drop.Close()) }()
	ca, err := newCAReader(cfg.Port)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, ca.Close()) }()

	cfg.progress("path %s ready: namespaces %s, %s, %s", path.ID, path.Sender, path.Router, path.Receiver)

	rep = &Report{Config: cfg, Kernel: kernelRelease()}
	for _, f := range []struct {
		cc   string
		beta uint32
	}{
		{"cubic", cubicBeta},
		{name, tcpplus.BetaPlusScaled(cubicBeta, cfg.N)},
	} {
		cfg.progress("measuring %s", f.cc)
		var discarded []string
		for attempt := 1; ; attempt++ {
			flow, err := measureFlow(ctx, path, drop, ca, f.cc, f.beta, cfg)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("backoff: interrupted: %w", ctx.Err())
			}
			if err != nil {
				return nil, err
			}
			if len(flow.Undos) == 0 || attempt == MaxAttempts {
				flow.Discarded = discarded
				rep.Flows = append(rep.Flows, flow)
				break
			}
			discarded = append(discarded, fmt.Sprintf("attempt %d: the kernel took a reduction back (%s)", attempt, flow.Undos))
			cfg.progress("%s: the kernel took a reduction back as spurious (%s); measuring again", f.cc, flow.Undos)
		}
	}
	rep.RatioGap = rep.Flows[1].SsthreshRatio - rep.Flows[0].SsthreshRatio
	rep.ExpectedRatioGap = rep.Flows[1].Beta - rep.Flows[0].Beta
	rep.Pass = rep.Flows[0].Pass && rep.Flows[1].Pass
	return rep, nil
}

// lossDetectionSysctls make the sender detect loss only by duplicate ACKs (SACK, three
// segments beyond the hole), as RFC 6675 does: no RACK time window (tcp_recovery 0) and no tail
// loss probes (tcp_early_retrans 0). The path's round trip before the queue fills is tens of
// microseconds (Flow.MinRTTMicros), so RACK's window, a quarter of it, is a few microseconds:
// a segment that a loaded machine's veth delivers that much late counts as lost,
// is retransmitted, and the kernel takes the reduction back when the original's ACK arrives.
// A tail loss probe, sent when the writer is descheduled, ends in a reduction of its own. The
// congestion control's ssthresh() — what is measured — is the same whichever detection
// started the recovery.
var lossDetectionSysctls = map[string]string{
	"ipv4/tcp_recovery":      "0",
	"ipv4/tcp_early_retrans": "0",
}

func classicLossDetection(p *nspath.Path) error {
	for key, value := range lossDetectionSysctls {
		if err := p.SetSysctl(p.Sender, key, value); err != nil {
			return fmt.Errorf("backoff: the sender's loss detection: %w", err)
		}
	}
	return nil
}

func kernelRelease() string {
	raw, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(raw))
}
