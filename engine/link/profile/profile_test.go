package profile

import (
	"encoding/json"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPresetsMatchDoc: the preset table of docs/profile-grammar.md and Presets are the same list,
// in the same order, with the same expansions.
func TestPresetsMatchDoc(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/profile-grammar.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| (?:`([^`]*)`|\\(nothing[^|]*\\))")
	rows := row.FindAllStringSubmatch(string(doc), -1)
	var names []string
	for _, m := range rows {
		if _, isKey := keyIndex[m[1]]; isKey {
			continue // the key table has the same shape
		}
		names = append(names, m[1])
		exp, ok := presetIndex[m[1]]
		if !ok {
			t.Errorf("doc preset %q is not in Presets", m[1])
			continue
		}
		if exp != m[2] {
			t.Errorf("preset %q: doc expands to %q, code to %q", m[1], m[2], exp)
		}
	}
	if got, want := strings.Join(names, ","), strings.Join(PresetNames(), ","); got != want {
		t.Errorf("doc presets %s\ncode presets %s", got, want)
	}
}

// TestKeysMatchDoc: every key of the doc's key table is a key of the parser and vice versa.
func TestKeysMatchDoc(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/profile-grammar.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (`[a-z_]+`(?:, `[a-z_]+`)*) \\| ")
	var names []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		for _, k := range strings.Split(m[1], ", ") {
			k = strings.Trim(k, "`")
			if _, isPreset := presetIndex[k]; !isPreset {
				names = append(names, k)
			}
		}
	}
	if got, want := strings.Join(names, ","), strings.Join(KeyNames(), ","); got != want {
		t.Errorf("doc keys %s\ncode keys %s", got, want)
	}
}

func TestParseSemantics(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		in    string
		check func(r Resolved) bool
	}{
		{"rtt=1ms,delay_down=7ms", func(r Resolved) bool { return r.Up.Delay == 500*time.Microsecond && r.Down.Delay == 7*ms }},
		{"delay_down=7ms,rtt=1ms", func(r Resolved) bool { return r.Down.Delay == 500*time.Microsecond }},
		{"bw=1mBiT", func(r Resolved) bool { return r.Up.RateBPS == 1_000_000 }},
		{"bw=100gbit", func(r Resolved) bool { return r.Up.RateBPS == MaxRateBPS }},
		{"bw=1kbit", func(r Resolved) bool { return r.Up.RateBPS == MinRateBPS }},
		{"bw=0.0015mbit", func(r Resolved) bool { return r.Up.RateBPS == 1500 }},
		{"rtt=3600s", func(r Resolved) bool { return r.Up.Delay == 30*time.Minute }},
		{"rtt=0.0004us", func(r Resolved) bool { return r.Up.Delay == 0 && r.Down.Delay == 0 }},
		{"rtt=0.0000000000000000000001s", func(r Resolved) bool { return r.Down.Delay == 0 }},
		{"rtt=00.000", func(r Resolved) bool { return r.Down.Delay == 0 }},
		{"jitter_up=1ms,jitter=2ms", func(r Resolved) bool { return r.Up.Jitter == 2*ms && r.Down.Jitter == 2*ms }},
		{"loss=0.5%", func(r Resolved) bool { return r.Up.Loss.P == 0.005 }},
		{"loss=33.3333333333333333333333%", func(r Resolved) bool { return math.Abs(r.Up.Loss.P-1.0/3) < 1e-15 }},
		{"loss=ge:1%:30%:50%", func(r Resolved) bool {
			return r.Up.Loss == Loss{Model: LossGilbertElliott, P: 0.01, R: 0.3, OneMinusH: 0.5, OneMinusK: 0}
		}},
		{"loss=ge:0:0", func(r Resolved) bool { return r.Up.Loss.Model == LossGilbertElliott }},
		{"queue=1MiB", func(r Resolved) bool { return r.Up.Queue == QueueLimit{Bytes: 1 << 20} }},
		{"queue=7p/1500B", func(r Resolved) bool { return r.Up.Queue == QueueLimit{Packets: 7, Bytes: 1500} }},
		{"queue=1000000000packets", func(r Resolved) bool { return r.Up.Queue.Packets == MaxQueuePackets }},
		{"queue_up=infinite", func(r Resolved) bool { return r.Up.Queue.Infinite() && r.Down.Queue.Packets == 256 }},
		{"trace_up=a=b.trace", func(r Resolved) bool { return r.Up.Trace == "a=b.trace" }},
		{"iw=0010,irw=1000", func(r Resolved) bool { return r.IW == 10 && r.IRW == 1000 }},
		{"origin_delay=1:1ms/64:2ms", func(r Resolved) bool {
			return len(r.OriginExtraRTT) == 2 && r.OriginExtraRTT[1] == ms && r.OriginExtraRTT[64] == 2*ms
		}},
		{"\trtt=1ms\t", func(r Resolved) bool { return r.Up.Delay == 500*time.Microsecond }},
		{"   ", func(r Resolved) bool { return r.Equal(Native()) }},
		{"native,native", func(r Resolved) bool { return r.Equal(Native()) }},
	}
	for _, c := range cases {
		r, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if !c.check(r) {
			t.Errorf("Parse(%q) = %#v: check failed", c.in, r)
		}
		if err := r.Validate(); err != nil {
			t.Errorf("Parse(%q) does not validate: %v", c.in, err)
		}
	}
}

func TestStringCanonical(t *testing.T) {
	cases := map[string]string{
		"":                                    "native",
		"cable":                               "rtt=28ms,bw_up=1mbit,bw_down=5mbit",
		"neoload":                             "delay_up=45ms,delay_down=40ms",
		"rtt=0.003us":                         "rtt=0.003us",
		"rtt=3ms,bw=1.5mbit,loss=0.5%":        "rtt=3ms,bw=1.5mbit,loss=0.005",
		"loss_up=ge:1%:30%,queue=64kB":        "loss_up=ge:0.01:0.3:1:0,queue=64000B",
		"queue=100/150000B,jitter=1.5ms":      "queue=100/150000B,jitter=1.5ms",
		"delay_up=3600s,delay_down=3600s":     "delay_up=3600s,delay_down=3600s",
		"bw=1mbit,trace_down=x":               "bw_up=1mbit,trace_down=x",
		"iw=3,cc=bbr,origin_delay=3:1s/2:1us": "iw=3,cc=bbr,origin_delay=2:1us/3:1s",
	}
	for in, want := range cases {
		r, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if got := r.String(); got != want {
			t.Errorf("Parse(%q).String() = %q, want %q", in, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	valid := MustParse("rtt=100ms,bw=10mbit,loss=ge:1%:30%,origin_delay=2:10ms")
	if err := valid.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		field  string
		mutate func(r *Resolved)
	}{
		{"up.delay_ns", func(r *Resolved) { r.Up.Delay = -1 }},
		{"down.delay_ns", func(r *Resolved) { r.Down.Delay = MaxDuration + 1 }},
		{"up.jitter_ns", func(r *Resolved) { r.Up.Jitter = -5 }},
		{"up.rate_bps", func(r *Resolved) { r.Up.RateBPS = 999 }},
		{"down.rate_bps", func(r *Resolved) { r.Down.RateBPS = MaxRateBPS + 1 }},
		{"down.trace", func(r *Resolved) { r.Down.Trace = "x" }}, // with a rate
		{"up.trace", func(r *Resolved) { r.Up.RateBPS, r.Up.Trace = 0, "a,b" }},
		{"up.loss.p", func(r *Resolved) { r.Up.Loss.P = 1.5 }},
		{"up.loss.r", func(r *Resolved) { r.Up.Loss.R = math.NaN() }},
		{"up.loss.one_minus_h", func(r *Resolved) { r.Up.Loss.OneMinusH = -0.1 }},
		{"down.loss.p", func(r *Resolved) { r.Down.Loss = Loss{Model: LossBernoulli} }},
		{"down.loss.model", func(r *Resolved) { r.Down.Loss = Loss{Model: LossBernoulli, P: 0.1, R: 0.2} }},
		{"down.loss.model", func(r *Resolved) { r.Down.Loss = Loss{Model: "random"} }},
		{"down.loss.model", func(r *Resolved) { r.Down.Loss = Loss{Model: LossNone, P: 0.1} }},
		{"up.queue.packets", func(r *Resolved) { r.Up.Queue.Packets = -1 }},
		{"up.queue.bytes", func(r *Resolved) { r.Up.Queue.Bytes = 100 }},
		{"iw", func(r *Resolved) { r.IW = 1001 }},
		{"irw", func(r *Resolved) { r.IRW = -1 }},
		{"cc", func(r *Resolved) { r.CC = "" }},
		{"origin_extra_rtt_ns", func(r *Resolved) { r.OriginExtraRTT = map[int]time.Duration{65: 1} }},
		{"origin_extra_rtt_ns.2", func(r *Resolved) { r.OriginExtraRTT = map[int]time.Duration{2: -1} }},
	}
	for _, c := range cases {
		r := MustParse(valid.String())
		c.mutate(&r)
		err := r.Validate()
		if err == nil {
			t.Errorf("%s: Validate accepted %#v", c.field, r)
			continue
		}
		if pe, ok := err.(*Error); !ok || pe.Field != c.field {
			t.Errorf("%s: Validate error %q names the wrong field", c.field, err)
		}
	}
}

func TestDecodeResolvedStrict(t *testing.T) {
	good, err := json.Marshal(MustParse("rtt=10ms,loss_down=ge:1%:2%,trace_up=t.up,origin_delay=3:1ms"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeResolved(good)
	if err != nil {
		t.Fatalf("DecodeResolved(%s): %v", good, err)
	}
	if !r.Equal(MustParse("rtt=10ms,loss_down=ge:1%:2%,trace_up=t.up,origin_delay=3:1ms")) {
		t.Errorf("round trip through JSON changed the profile: %#v", r)
	}
	cases := []struct{ field, old, new string }{
		{"up.delay_nss", `"delay_ns"`, `"delay_nss"`},                                 // unknown (and so delay_ns missing)
		{"cc", `"cc":"cubic"`, `"cc":5`},                                              // wrong type
		{"up.queue.packets", `"packets":256`, `"packets":25.6`},                       // not whole
		{"down.loss.model", `"model":"gilbert-elliott"`, `"model":"ge"`},              // unknown model
		{"down.loss.r", `,"r":0.02`, ``},                                              // missing GE field
		{"origin_extra_rtt_ns", `{"3":1000000}`, `{"x":1}`},                           // bad origin key
		{"origin_extra_rtt_ns", `{"3":1000000}`, `{"03":1}`},                          // not canonical
		{"up.trace", `"trace":"t.up"`, `"trace":""`},                                  // empty path
		{"up.rate_bps", `"rate_bps":0,"trace":"t.up"`, `"rate_bps":5,"trace":"t.up"`}, // Validate runs
		{"profile", string(good), `[1,2]`},
	}
	for _, c := range cases {
		in := strings.Replace(string(good), c.old, c.new, 1)
		if in == string(good) {
			t.Fatalf("%s: %q not found in %s", c.field, c.old, good)
		}
		_, err := DecodeResolved([]byte(in))
		if err == nil {
			t.Errorf("%s: DecodeResolved(%s) succeeded", c.field, in)
			continue
		}
		pe, ok := err.(*Error)
		if !ok || !strings.HasPrefix(pe.Field, c.field) {
			t.Errorf("%s: error %q names the wrong field", c.field, err)
		}
	}
	// json.Unmarshal into a Resolved is just as strict about structure.
	var r2 Resolved
	if err := json.Unmarshal([]byte(`{"up":{}}`), &r2); err == nil {
		t.Error("json.Unmarshal accepted an incomplete resolved profile")
	}
}

func TestMarshalNilOriginMap(t *testing.T) {
	r := Native()
	r.OriginExtraRTT = nil
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"origin_extra_rtt_ns":{}`) {
		t.Errorf("nil origin map marshals as %s", b)
	}
	if _, err := json.Marshal(Loss{Model: "bogus"}); err == nil {
		t.Error("an unknown loss model marshals")
	}
}

func TestLongValuesAreAbbreviated(t *testing.T) {
	_, err := Parse("rtt=" + strings.Repeat("9", 5000) + "ms")
	if err == nil {
		t.Fatal("accepted")
	}
	if n := len(err.Error()); n > 400 {
		t.Errorf("error repeats a 5000-byte value: %d bytes", n)
	}
	if !strings.Contains(err.Error(), `..."`) {
		t.Errorf("abbreviated value not marked: %q", err)
	}
}

// TestNetworkDocPresetTable: the preset table of docs/network.md (rates, RTT, one-way delays,
// loss) agrees with what the parser makes of each preset — the RTT convention made visible.
func TestNetworkDocPresetTable(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/network.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| ([^|]+) \\| ([^|]+) \\| ([0-9.]+) ms \\| ([0-9.]+) / ([0-9.]+) ms \\| ([^|]+) \\|")
	rate := func(s string) int64 {
		s = strings.TrimSpace(s)
		if s == "unlimited" {
			return 0
		}
		v, err := parseRate("doc", strings.ToLower(strings.ReplaceAll(strings.TrimSuffix(s, "/s"), " ", "")))
		if err != nil {
			t.Fatalf("doc rate %q: %v", s, err)
		}
		return v
	}
	msDur := func(s string) time.Duration {
		d, err := parseDuration("doc", s+"ms")
		if err != nil {
			t.Fatalf("doc duration %q: %v", s, err)
		}
		return d
	}
	seen := 0
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		seen++
		r, err := Parse(m[1])
		if err != nil {
			t.Errorf("doc preset %q: %v", m[1], err)
			continue
		}
		loss := 0.0
		if l := strings.TrimSpace(m[7]); l != "0" {
			loss, _ = parseProb("doc", l, strings.ReplaceAll(l, " ", ""), "")
		}
		if r.Down.RateBPS != rate(m[2]) || r.Up.RateBPS != rate(m[3]) ||
			r.Up.Delay+r.Down.Delay != msDur(m[4]) || r.Up.Delay != msDur(m[5]) || r.Down.Delay != msDur(m[6]) ||
			r.Up.Loss.P != loss || r.Down.Loss.P != loss {
			t.Errorf("docs/network.md row %q disagrees with Parse(%q) = %#v", m[0], m[1], r)
		}
	}
	if seen != len(Presets) {
		t.Errorf("docs/network.md lists %d presets, the parser has %d", seen, len(Presets))
	}
}
