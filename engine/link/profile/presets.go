package profile

// Preset is a named profile. Its expansion is itself a profile string, applied in place.
type Preset struct {
	Name      string
	Expansion string
	About     string // where the numbers come from
	// Device, if set, is the client device the preset's source runs with (Lighthouse's): a trial
	// whose network starts with the preset gets it where it sets neither field (docs/vitals.md).
	Device *Device
}

// Device is a client device: Chromium's CPU slowdown and emulated screen (client.cpu_slowdown and
// client.viewport of the trial spec).
type Device struct {
	CPUSlowdown float64 `json:"cpu_slowdown"`
	Viewport    string  `json:"viewport"`
}

// Presets in documented order (docs/profile-grammar.md; a test checks that the doc's table and this
// list agree). WebPageTest's connectivity.ini gives `latency` as the round-trip time, so it becomes
// rtt here (half per direction), as WebPageTest's own shaper applies it.
var Presets = []Preset{
	{"native", "", "no shaping at all", nil},
	{"fios", "bw_down=20mbit,bw_up=5mbit,rtt=4ms", "WebPageTest FIOS", nil},
	{"cable", "bw_down=5mbit,bw_up=1mbit,rtt=28ms", "WebPageTest Cable", nil},
	{"dsl", "bw_down=1.5mbit,bw_up=384kbit,rtt=50ms", "WebPageTest DSL", nil},
	{"lte", "bw=12mbit,rtt=70ms", "WebPageTest LTE", nil},
	{"4g", "bw=9mbit,rtt=170ms", "WebPageTest 4G", nil},
	{"3gfast", "bw_down=1.6mbit,bw_up=768kbit,rtt=150ms", "WebPageTest 3G Fast", nil},
	{"3g", "bw_down=1.6mbit,bw_up=768kbit,rtt=300ms", "WebPageTest 3G", nil},
	{"3gslow", "bw=400kbit,rtt=400ms", "WebPageTest 3G Slow", nil},
	{"2g", "bw_down=280kbit,bw_up=256kbit,rtt=800ms", "WebPageTest 2G", nil},
	{"edge", "bw_down=240kbit,bw_up=200kbit,rtt=840ms", "WebPageTest Edge", nil},
	{"dial", "bw_down=49kbit,bw_up=30kbit,rtt=120ms", "WebPageTest 56K Dial-Up", nil},
	{"lighthouse-mobile", "bw_down=1.6mbit,bw_up=750kbit,rtt=150ms", "Lighthouse's mobile run: mobileSlow4G (rttMs 150, 1.6 Mbit/s down, 750 kbit/s up — the packet-level values of Lighthouse's docs/throttling.md, not DevTools' request-level × 3.75 latency and × 0.9 throughput), CPU × 4, the moto g power's screen (core/config/constants.js)",
		&Device{CPUSlowdown: 4, Viewport: "412x823@1.75,mobile"}},
	{"lighthouse-desktop", "bw=10mbit,rtt=40ms", "Lighthouse's desktop run: desktopDense4G (rttMs 40, 10 Mbit/s), CPU × 1, a 1350×940 screen (core/config/constants.js)",
		&Device{CPUSlowdown: 1, Viewport: "1350x940"}},
	{"elkhatib-default", "bw=1mbit,rtt=150ms,queue=256", "study E's default testbed", nil},
	{"wang-epload", "bw=10mbit,rtt=20ms", "study W's variability check", nil},
	{"neoload", "delay_down=40ms,delay_up=45ms", "study N: 40 ms down, 45 ms up", nil},
	{"unh-high-latency", "bw=10mbit,rtt=300ms", "study U: high latency, zero loss (our numbers)", nil},
	{"unh-high-loss", "bw=10mbit,rtt=2ms,loss=3%", "study U: near-zero latency, high loss (our numbers)", nil},
	{"unh-high-both", "bw=10mbit,rtt=300ms,loss=3%", "study U: both (our numbers)", nil},
}

var presetIndex = func() map[string]string {
	m := make(map[string]string, len(Presets))
	for _, p := range Presets {
		m[p.Name] = p.Expansion
	}
	return m
}()

// PresetNames lists the preset names in documented order.
func PresetNames() []string {
	out := make([]string, len(Presets))
	for i, p := range Presets {
		out[i] = p.Name
	}
	return out
}
