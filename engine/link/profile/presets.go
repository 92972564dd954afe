package profile

// Preset is a named profile. Its expansion is itself a profile string, applied in place.
type Preset struct {
	Name      string
	Expansion string
	About     string // where the numbers come from
}

// Presets in documented order (docs/profile-grammar.md; a test checks that the doc's table and this
// list agree). WebPageTest's connectivity.ini gives `latency` as the round-trip time, so it becomes
// rtt here (half per direction), as WebPageTest's own shaper applies it.
var Presets = []Preset{
	{"native", "", "no shaping at all"},
	{"fios", "bw_down=20mbit,bw_up=5mbit,rtt=4ms", "WebPageTest FIOS"},
	{"cable", "bw_down=5mbit,bw_up=1mbit,rtt=28ms", "WebPageTest Cable"},
	{"dsl", "bw_down=1.5mbit,bw_up=384kbit,rtt=50ms", "WebPageTest DSL"},
	{"lte", "bw=12mbit,rtt=70ms", "WebPageTest LTE"},
	{"4g", "bw=9mbit,rtt=170ms", "WebPageTest 4G"},
	{"3gfast", "bw_down=1.6mbit,bw_up=768kbit,rtt=150ms", "WebPageTest 3G Fast"},
	{"3g", "bw_down=1.6mbit,bw_up=768kbit,rtt=300ms", "WebPageTest 3G"},
	{"3gslow", "bw=400kbit,rtt=400ms", "WebPageTest 3G Slow"},
	{"2g", "bw_down=280kbit,bw_up=256kbit,rtt=800ms", "WebPageTest 2G"},
	{"edge", "bw_down=240kbit,bw_up=200kbit,rtt=840ms", "WebPageTest Edge"},
	{"dial", "bw_down=49kbit,bw_up=30kbit,rtt=120ms", "WebPageTest 56K Dial-Up"},
	{"elkhatib-default", "bw=1mbit,rtt=150ms,queue=256", "study E's default testbed"},
	{"wang-epload", "bw=10mbit,rtt=20ms", "study W's variability check"},
	{"neoload", "delay_down=40ms,delay_up=45ms", "study N: 40 ms down, 45 ms up"},
	{"unh-high-latency", "bw=10mbit,rtt=300ms", "study U: high latency, zero loss (our numbers)"},
	{"unh-high-loss", "bw=10mbit,rtt=2ms,loss=3%", "study U: near-zero latency, high loss (our numbers)"},
	{"unh-high-both", "bw=10mbit,rtt=300ms,loss=3%", "study U: both (our numbers)"},
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
