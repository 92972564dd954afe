package main

import (
	"fmt"
	"os"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/units"
	"github.com/wirelab/wirelab/engine/link/profile"
)

func init() {
	register("profiles", command{
		Summary: "the network profile grammar's presets, keys, units and limits as JSON (profiles ls)",
		Run:     runProfiles,
	})
}

const profilesUsage = `usage: wirelab-engine profiles ls
Prints, as JSON on stdout, what the network profile grammar (docs/profile-grammar.md) knows:
every preset with its expansion and resolved form, the keys, the units of durations, rates and
sizes, the value limits, the congestion controls and the queue disciplines (each one's default
limit, parameters and keys). The control plane reads the same facts from
wirelab/_engine_facts.json (wirelab-engine facts).`

// profileFacts is the output of `profiles ls`.
type profileFacts struct {
	Presets            []presetFacts       `json:"presets"`
	Keys               []string            `json:"keys"`
	Units              unitFacts           `json:"units"`
	Limits             limitFacts          `json:"limits"`
	CongestionControls []string            `json:"congestion_controls"`
	Disciplines        []disciplineFacts   `json:"disciplines"`
	DisciplineKeys     []profile.ParamInfo `json:"discipline_keys"`
}

// disciplineFacts is one queue discipline: its default limit and parameters (in the resolved
// form) and the parameter keys it takes.
type disciplineFacts struct {
	Name         string             `json:"name"`
	About        string             `json:"about"`
	DefaultLimit profile.QueueLimit `json:"default_limit"`
	Defaults     profile.Discipline `json:"defaults"`
	Keys         []string           `json:"keys"`
}

type presetFacts struct {
	Name      string           `json:"name"`
	Expansion string           `json:"expansion"`
	About     string           `json:"about"`
	Device    *profile.Device  `json:"device"` // null: the preset is a network only
	Resolved  profile.Resolved `json:"resolved"`
}

type unitFacts struct {
	Duration  []units.Unit `json:"duration"`   // → ns, case-sensitive
	Rate      []units.Unit `json:"rate"`       // → bit/s, any case
	ByteRates []string     `json:"byte_rates"` // refused by name, any case
	Size      []units.Unit `json:"size"`       // → bytes, case-sensitive
}

type limitFacts struct {
	MaxDurationNS       int64 `json:"max_duration_ns"`
	MinRateBPS          int64 `json:"min_rate_bps"`
	MaxRateBPS          int64 `json:"max_rate_bps"`
	MaxQueuePackets     int64 `json:"max_queue_packets"`
	MinQueueBytes       int64 `json:"min_queue_bytes"`
	MaxQueueBytes       int64 `json:"max_queue_bytes"`
	DefaultQueuePackets int   `json:"default_queue_packets"`
	MaxWindow           int   `json:"max_window"`
	MaxTCPPlus          int   `json:"max_tcpplus"`
	MaxOrigin           int   `json:"max_origin"`
	// Discipline parameters (docs/profile-grammar.md).
	MinCoDelNS      int64 `json:"min_codel_ns"`
	MaxCoDelNS      int64 `json:"max_codel_ns"`
	MaxFQFlows      int   `json:"max_fq_flows"`
	MinFQQuantum    int   `json:"min_fq_quantum"`
	MaxFQQuantum    int   `json:"max_fq_quantum"`
	MinPIETUpdateNS int64 `json:"min_pie_tupdate_ns"`
	MaxPIENS        int64 `json:"max_pie_ns"`
	MaxPIEWeight    int   `json:"max_pie_weight"`
	MinREDBytes     int64 `json:"min_red_bytes"`
}

func runProfiles(args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Println(profilesUsage)
		return nil
	}
	if len(args) != 1 || args[0] != "ls" {
		return cli.Usagef("profiles: want the subcommand ls and nothing else (profiles --help)")
	}
	facts, err := profilesFacts()
	if err != nil {
		return err
	}
	return emitJSON(os.Stdout, facts)
}

func profilesFacts() (profileFacts, error) {
	f := profileFacts{
		Keys: profile.KeyNames(),
		Units: unitFacts{Duration: units.Durations, Rate: units.Rates, ByteRates: units.ByteRates,
			Size: units.Sizes},
		Limits: limitFacts{
			MaxDurationNS: int64(profile.MaxDuration), MinRateBPS: profile.MinRateBPS, MaxRateBPS: profile.MaxRateBPS,
			MaxQueuePackets: profile.MaxQueuePackets, MinQueueBytes: profile.MinQueueBytes,
			MaxQueueBytes: profile.MaxQueueBytes, DefaultQueuePackets: profile.DefaultQueueSize,
			MaxWindow: profile.MaxWindow, MaxTCPPlus: profile.MaxTCPPlus, MaxOrigin: profile.MaxOrigin,
			MinCoDelNS: int64(profile.MinCoDelTime), MaxCoDelNS: int64(profile.MaxCoDelTime), MaxFQFlows: profile.MaxFQFlows,
			MinFQQuantum: profile.MinFQQuantum, MaxFQQuantum: profile.MaxFQQuantum, MinPIETUpdateNS: int64(profile.MinPIETUpdate),
			MaxPIENS: int64(profile.MaxPIETime), MaxPIEWeight: profile.MaxPIEWeight, MinREDBytes: profile.MinREDBytes,
		},
		CongestionControls: profile.CongestionControls,
	}
	f.DisciplineKeys = profile.ParamKeys()
	for _, d := range profile.Disciplines {
		f.Disciplines = append(f.Disciplines, disciplineFacts{Name: d.Name, About: d.About, DefaultLimit: d.DefaultLimit, Defaults: d.Defaults, Keys: append([]string{}, d.Keys...)})
	}
	for _, p := range profile.Presets {
		r, err := profile.Parse(p.Name)
		if err != nil {
			return profileFacts{}, fmt.Errorf("preset %s: %w", p.Name, err)
		}
		f.Presets = append(f.Presets, presetFacts{Name: p.Name, Expansion: p.Expansion, About: p.About, Device: p.Device, Resolved: r})
	}
	return f, nil
}
