// Package profile parses wirelab's network profile strings — `rtt=150ms,bw=1mbit,loss=0.5%` or a
// preset name such as `cable` — into the resolved form that the link model and the trial contract
// use. The grammar, the presets and the resolved JSON form are specified in
// docs/profile-grammar.md; the Python control plane has a twin parser (wirelab/_netprofile.py) and
// both are held to testdata/netprofile_golden.json, every error to its full message.
//
//	r, err := profile.Parse("cable,loss=1%")  // err is a *profile.Error: one line naming field and value
//	r.Down.RateBPS                            // 5000000
//	json.Marshal(r)                           // the resolved form of docs/profile-grammar.md
//	r.String()                                // a canonical profile string: Parse(r.String()) == r
//
// Bad input is refused once, here, with an *Error that names the field, the value and what is
// allowed. Resolved.Validate checks a resolved profile that did not come from Parse (e.g. decoded
// from JSON with DecodeResolved); LoadTrace validates a mahimahi trace file named by trace_up or
// trace_down.
package profile

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/internal/suggest"
)

// Loss model names, as in the resolved form.
const (
	LossNone           = "none"
	LossBernoulli      = "bernoulli"
	LossGilbertElliott = "gilbert-elliott"
)

// Resolved is a fully resolved network profile: every knob has a value.
type Resolved struct {
	Up   Direction `json:"up"`   // client → server
	Down Direction `json:"down"` // server → client
	// IW is the TCP initial congestion window in segments on the routes; 0 = kernel default.
	IW int `json:"iw"`
	// IRW is the TCP initial receive window in segments on the routes; 0 = kernel default.
	IRW int `json:"irw"`
	// CC is the congestion control on the routes: cubic (default), bbr or reno.
	CC string `json:"cc"`
	// TCPPlus is study W's TCP+ (docs/tcpplus.md): N > 0 makes the server's connections behave
	// like N: initcwnd IW×N and initrwnd IRW×N on the server's routes (the kernel's 10 when IW or
	// IRW is 0), initrwnd IRW×N on the client's, and congestion control wl_cubicp<N> on the
	// server's. 0 (default) = off; needs CC cubic.
	TCPPlus int `json:"tcpplus"`
	// OriginExtraRTT is the extra round-trip delay of origin N (1-based), split half per direction
	// like rtt. Marshals as {"N": ns}; never nil after Parse.
	OriginExtraRTT map[int]time.Duration `json:"origin_extra_rtt_ns"`
	// ECN (ecn=1) turns on Explicit Congestion Notification: the gateway's disciplines mark CE
	// instead of dropping where they can (docs/network.md), and TCP negotiates ECN in both
	// namespaces (net.ipv4.tcp_ecn=1). Default off.
	ECN bool `json:"ecn"`
}

// Direction is one direction of the emulated path.
type Direction struct {
	Delay   time.Duration // one-way propagation delay (delay_ns); default 0
	Jitter  time.Duration // uniform ±Jitter added to each packet's delay, never reordering (jitter_ns); default 0
	RateBPS int64         // bottleneck rate in bits/s (rate_bps); 0 = unlimited
	Trace   string        // mahimahi trace path as written (trace; "" = none ↔ null); replaces RateBPS
	Loss    Loss          // loss model (loss); default none
	Queue   QueueLimit    // the queue's limits (queue=[NAME:]LIMIT); default 256 packets
	// Discipline is the queue's algorithm (queue=NAME, discipline); default drop-tail.
	Discipline Discipline
}

// Loss is a loss model. Which fields are meaningful depends on Model.
type Loss struct {
	Model string // LossNone, LossBernoulli or LossGilbertElliott
	// P is the loss probability (bernoulli) or the good→bad transition probability per packet
	// (gilbert-elliott).
	P float64
	// R is the bad→good transition probability per packet (gilbert-elliott).
	R float64
	// OneMinusH is the loss probability in the bad state (gilbert-elliott; netem's 1-h).
	OneMinusH float64
	// OneMinusK is the loss probability in the good state (gilbert-elliott; netem's 1-k).
	OneMinusK float64
}

// QueueLimit bounds the queue. 0 in a dimension means no limit in that dimension; both 0 is the
// infinite queue (queue=infinite) — except for docsis_pie, whose 0/0 is its default buffer
// (DOCSISPIEBuffer at the link's rate).
type QueueLimit struct {
	Packets int64 `json:"packets"`
	Bytes   int64 `json:"bytes"`
}

// Native returns the profile of the empty string: no delay, unlimited rate, no loss, a 256-packet
// queue, kernel TCP defaults with cubic.
func Native() Resolved {
	d := Direction{Loss: Loss{Model: LossNone}, Queue: QueueLimit{Packets: DefaultQueueSize}, Discipline: Discipline{Name: DropTail}}
	return Resolved{Up: d, Down: d, CC: "cubic", OriginExtraRTT: map[int]time.Duration{}}
}

// Parse parses a profile string (docs/profile-grammar.md). Errors are *Error.
func Parse(s string) (Resolved, error) {
	r := Native()
	if err := r.apply(s); err != nil {
		return Resolved{}, err
	}
	if err := r.checkTCPPlus("tcpplus"); err != nil {
		return Resolved{}, err
	}
	if err := r.checkDisciplines(); err != nil {
		return Resolved{}, err
	}
	if err := r.checkShared(true); err != nil {
		return Resolved{}, err
	}
	return r, nil
}

// MustParse is Parse for constants in tests and presets; it panics on error.
func MustParse(s string) Resolved {
	r, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return r
}

// trimBlank removes ASCII spaces and tabs around s (the grammar ignores them around items, keys
// and values; other white space is not special).
func trimBlank(s string) string { return strings.Trim(s, " \t") }

func (r *Resolved) apply(s string) error {
	if trimBlank(s) == "" {
		return nil
	}
	items := strings.Split(s, ",")
	for i, raw := range items {
		item := trimBlank(raw)
		if item == "" {
			return newError("profile", s, fmt.Sprintf("has an empty item (item %d of %d)", i+1, len(items)),
				"separate items with single commas (each item is KEY=VALUE or a preset name)")
		}
		key, value, hasValue := strings.Cut(item, "=")
		if !hasValue {
			if err := r.applyPreset(item); err != nil {
				return err
			}
			continue
		}
		key, value = trimBlank(key), trimBlank(value)
		if key == "" {
			return newError("profile", item, "has no key before =", "write KEY=VALUE, e.g. rtt=100ms")
		}
		k, ok := keyIndex[key]
		if !ok {
			return unknownKey(key)
		}
		if err := k.set(r, key, value); err != nil {
			return err
		}
	}
	return nil
}

func (r *Resolved) applyPreset(name string) error {
	expansion, ok := presetIndex[name]
	if ok {
		return r.apply(expansion)
	}
	if _, isKey := keyIndex[name]; isKey {
		return newError(name, name, "is a key without a value", fmt.Sprintf("write %s=VALUE (a bare name must be a preset: %s)", name, strings.Join(PresetNames(), ", ")))
	}
	// A bare word is compared with the presets first, then with the keys (rt → rtt=VALUE).
	allowed := "presets are " + strings.Join(PresetNames(), ", ")
	if s := suggest.Closest(name, PresetNames()); s != "" {
		allowed = fmt.Sprintf("did you mean %s? %s", s, allowed)
	} else if s := suggest.Closest(name, KeyNames()); s != "" {
		allowed = fmt.Sprintf("did you mean %s=VALUE? %s", s, allowed)
	}
	return newError(nameField(name, "profile"), name, "is not a known preset", allowed)
}

func unknownKey(key string) error {
	if _, isPreset := presetIndex[key]; isPreset {
		return newError(key, key, "is a preset, not a key", fmt.Sprintf("write the preset alone (e.g. %s,rtt=50ms)", key))
	}
	allowed := suggest.DidYouMean(key, KeyNames()) + "keys are " + strings.Join(KeyNames(), ", ")
	return newError(nameField(key, "profile"), key, "is not a known key", allowed)
}

// key is one KEY of the grammar and how it sets a Resolved.
type key struct {
	name string
	set  func(r *Resolved, field, value string) error
}

// keys in the order of docs/profile-grammar.md (error messages list them in this order).
var keys = []key{
	{"rtt", func(r *Resolved, f, v string) error {
		d, err := parseDuration(f, v)
		if err != nil {
			return err
		}
		r.Up.Delay, r.Down.Delay = splitRTT(d)
		return nil
	}},
	{"delay_up", durationKey(func(r *Resolved) *time.Duration { return &r.Up.Delay })},
	{"delay_down", durationKey(func(r *Resolved) *time.Duration { return &r.Down.Delay })},
	{"bw", rateKey(true, true)},
	{"bw_up", rateKey(true, false)},
	{"bw_down", rateKey(false, true)},
	{"loss", lossKey(true, true)},
	{"loss_up", lossKey(true, false)},
	{"loss_down", lossKey(false, true)},
	{"queue", queueKey(true, true)},
	{"queue_up", queueKey(true, false)},
	{"queue_down", queueKey(false, true)},
	{"codel_target", setsParam("codel_target")},
	{"codel_interval", setsParam("codel_interval")},
	{"fq_flows", setsParam("fq_flows")},
	{"fq_quantum", setsParam("fq_quantum")},
	{"pie_target", setsParam("pie_target")},
	{"pie_tupdate", setsParam("pie_tupdate")},
	{"pie_alpha", setsParam("pie_alpha")},
	{"pie_beta", setsParam("pie_beta")},
	{"pie_burst", setsParam("pie_burst")},
	{"red_min", setsParam("red_min")},
	{"red_max", setsParam("red_max")},
	{"red_probability", setsParam("red_probability")},
	{"red_weight", setsParam("red_weight")},
	{"red_adaptive", setsParam("red_adaptive")},
	{"ecn", func(r *Resolved, f, v string) (err error) {
		r.ECN, err = parseSwitch(f, v, "use 1 (on) or 0 (off)")
		return
	}},
	{"jitter", func(r *Resolved, f, v string) error {
		d, err := parseDuration(f, v)
		r.Up.Jitter, r.Down.Jitter = d, d
		return err
	}},
	{"jitter_up", durationKey(func(r *Resolved) *time.Duration { return &r.Up.Jitter })},
	{"jitter_down", durationKey(func(r *Resolved) *time.Duration { return &r.Down.Jitter })},
	{"trace_up", traceKey(func(r *Resolved) *Direction { return &r.Up })},
	{"trace_down", traceKey(func(r *Resolved) *Direction { return &r.Down })},
	{"iw", func(r *Resolved, f, v string) (err error) { r.IW, err = parseWindow(f, v); return }},
	{"irw", func(r *Resolved, f, v string) (err error) { r.IRW, err = parseWindow(f, v); return }},
	{"cc", func(r *Resolved, f, v string) (err error) { r.CC, err = parseCC(f, v); return }},
	{"tcpplus", func(r *Resolved, f, v string) (err error) { r.TCPPlus, err = parseTCPPlus(f, v); return }},
	{"origin_delay", func(r *Resolved, f, v string) error {
		m, err := parseOriginDelay(f, v)
		if err != nil {
			return err
		}
		r.OriginExtraRTT = m // a later origin_delay replaces the whole map
		return nil
	}},
}

var keyIndex = func() map[string]key {
	m := make(map[string]key, len(keys))
	for _, k := range keys {
		m[k.name] = k
	}
	return m
}()

// KeyNames lists the grammar's keys in documented order.
func KeyNames() []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.name
	}
	return out
}

// splitRTT splits a round-trip delay half per direction; an odd nanosecond goes down.
func splitRTT(rtt time.Duration) (up, down time.Duration) { return rtt / 2, rtt - rtt/2 }

// SplitRTT is the rtt convention, exported for origin_extra_rtt_ns users: half up, half down, an
// odd nanosecond down.
func SplitRTT(rtt time.Duration) (up, down time.Duration) { return splitRTT(rtt) }

func durationKey(field func(*Resolved) *time.Duration) func(*Resolved, string, string) error {
	return func(r *Resolved, f, v string) error {
		d, err := parseDuration(f, v)
		*field(r) = d
		return err
	}
}

// rateKey sets the rate of the chosen directions. A rate and a trace are the same knob (what
// serves the queue), so setting one clears the other: the later item wins.
func rateKey(up, down bool) func(*Resolved, string, string) error {
	return func(r *Resolved, f, v string) error {
		bps, err := parseRate(f, v)
		if err != nil {
			return err
		}
		for _, d := range pick(r, up, down) {
			d.RateBPS, d.Trace = bps, ""
		}
		return nil
	}
}

func lossKey(up, down bool) func(*Resolved, string, string) error {
	return func(r *Resolved, f, v string) error {
		l, err := parseLoss(f, v)
		if err != nil {
			return err
		}
		for _, d := range pick(r, up, down) {
			d.Loss = l
		}
		return nil
	}
}

// queueKey sets the queue of the chosen directions: its discipline (with that discipline's default
// parameters: parameter keys apply after it) and its limit.
func queueKey(up, down bool) func(*Resolved, string, string) error {
	return func(r *Resolved, f, v string) error {
		disc, q, err := parseQueueItem(f, v)
		if err != nil {
			return err
		}
		for _, d := range pick(r, up, down) {
			d.Queue, d.Discipline = q, disc
		}
		return nil
	}
}

// setsParam sets a discipline parameter in every direction whose discipline takes it.
func setsParam(name string) func(*Resolved, string, string) error {
	return func(r *Resolved, _, v string) error { return r.setParam(name, v) }
}

func traceKey(dir func(*Resolved) *Direction) func(*Resolved, string, string) error {
	return func(r *Resolved, f, v string) error {
		p, err := parseTracePath(f, v)
		if err != nil {
			return err
		}
		d := dir(r)
		d.Trace, d.RateBPS = p, 0
		return nil
	}
}

func pick(r *Resolved, up, down bool) []*Direction {
	switch {
	case up && down:
		return []*Direction{&r.Up, &r.Down}
	case up:
		return []*Direction{&r.Up}
	default:
		return []*Direction{&r.Down}
	}
}

// Equal reports whether a and b are the same resolved profile (an absent and an empty origin map
// are equal).
func (r Resolved) Equal(o Resolved) bool {
	if r.Up != o.Up || r.Down != o.Down || r.IW != o.IW || r.IRW != o.IRW || r.CC != o.CC || r.TCPPlus != o.TCPPlus || r.ECN != o.ECN ||
		len(r.OriginExtraRTT) != len(o.OriginExtraRTT) {
		return false
	}
	for k, v := range r.OriginExtraRTT {
		if w, ok := o.OriginExtraRTT[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// GoString helps test failures print something readable.
func (r Resolved) GoString() string {
	b, _ := json.Marshal(r)
	return string(b)
}
