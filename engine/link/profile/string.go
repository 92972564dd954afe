package profile

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/internal/units"
)

// String returns the canonical profile string of r: the shortest set of items, in key order, that
// Parse turns back into r ("native" when everything is default). Both-direction keys are used when
// both directions agree, rtt when the delays are an rtt split. For every r that passes Validate,
// Parse(r.String()) equals r.
func (r Resolved) String() string {
	var items []string
	add := func(key, value string) { items = append(items, key+"="+value) }

	up, down := r.Up, r.Down
	if rtt := up.Delay + down.Delay; (down.Delay == up.Delay || down.Delay == up.Delay+1) && rtt <= MaxDuration {
		if rtt != 0 {
			add("rtt", formatDuration(rtt))
		}
	} else {
		add("delay_up", formatDuration(up.Delay))
		add("delay_down", formatDuration(down.Delay))
	}
	both(&items, "bw", up.RateBPS, down.RateBPS, 0, formatRate)
	both(&items, "loss", up.Loss, down.Loss, Loss{Model: LossNone}, formatLoss)
	switch uq, dq, def := queueOf(up), queueOf(down), (queueState{QueueLimit{Packets: DefaultQueueSize}, DropTail}); {
	case uq == dq && uq != def:
		add("queue", formatQueueItem(up))
	case uq != dq:
		if uq != def {
			add("queue_up", formatQueueItem(up))
		}
		if dq != def {
			add("queue_down", formatQueueItem(down))
		}
	}
	items = append(items, paramItems(r)...)
	if r.ECN {
		add("ecn", "1")
	}
	both(&items, "jitter", up.Jitter, down.Jitter, 0, formatDuration)
	if up.Trace != "" {
		add("trace_up", up.Trace)
	}
	if down.Trace != "" {
		add("trace_down", down.Trace)
	}
	if r.IW != 0 {
		add("iw", strconv.Itoa(r.IW))
	}
	if r.IRW != 0 {
		add("irw", strconv.Itoa(r.IRW))
	}
	if r.CC != "cubic" {
		add("cc", r.CC)
	}
	if r.TCPPlus != 0 {
		add("tcpplus", strconv.Itoa(r.TCPPlus))
	}
	if len(r.OriginExtraRTT) > 0 {
		origins := make([]int, 0, len(r.OriginExtraRTT))
		for n := range r.OriginExtraRTT {
			origins = append(origins, n)
		}
		sort.Ints(origins)
		entries := make([]string, len(origins))
		for i, n := range origins {
			entries[i] = strconv.Itoa(n) + ":" + formatDuration(r.OriginExtraRTT[n])
		}
		add("origin_delay", strings.Join(entries, "/"))
	}
	if len(items) == 0 {
		return "native"
	}
	return strings.Join(items, ",")
}

// both appends KEY=v when up and down agree (and differ from the default), else KEY_up/KEY_down
// for each direction that differs from the default.
func both[T comparable](items *[]string, key string, up, down, def T, format func(T) string) {
	switch {
	case up == down && up != def:
		*items = append(*items, key+"="+format(up))
	case up != down:
		if up != def {
			*items = append(*items, key+"_up="+format(up))
		}
		if down != def {
			*items = append(*items, key+"_down="+format(down))
		}
	}
}

func formatDuration(d time.Duration) string {
	ns := int64(d)
	switch {
	case ns == 0:
		return "0"
	case ns%1_000_000_000 == 0:
		return strconv.FormatInt(ns/1_000_000_000, 10) + "s"
	case ns >= 1_000_000:
		return units.FormatScaled(ns, 6) + "ms"
	default:
		return units.FormatScaled(ns, 3) + "us"
	}
}

func formatRate(bps int64) string {
	switch {
	case bps == 0:
		return "unlimited"
	case bps >= 1_000_000_000:
		return units.FormatScaled(bps, 9) + "gbit"
	case bps >= 1_000_000:
		return units.FormatScaled(bps, 6) + "mbit"
	case bps >= 1_000:
		return units.FormatScaled(bps, 3) + "kbit"
	default:
		return strconv.FormatInt(bps, 10) + "bit"
	}
}

func formatProb(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

func formatLoss(l Loss) string {
	switch l.Model {
	case LossBernoulli:
		return formatProb(l.P)
	case LossGilbertElliott:
		return "ge:" + formatProb(l.P) + ":" + formatProb(l.R) + ":" + formatProb(l.OneMinusH) + ":" + formatProb(l.OneMinusK)
	default:
		return "0"
	}
}

func formatQueue(q QueueLimit) string {
	switch {
	case q.Infinite():
		return "infinite"
	case q.Bytes == 0:
		return strconv.FormatInt(q.Packets, 10)
	case q.Packets == 0:
		return strconv.FormatInt(q.Bytes, 10) + "B"
	default:
		return strconv.FormatInt(q.Packets, 10) + "/" + strconv.FormatInt(q.Bytes, 10) + "B"
	}
}
