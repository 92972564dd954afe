package loadgen

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"time"

	"github.com/wirelab/wirelab/engine/contract"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/spec"
)

// Contract is the version of the loadtest spec (schemas/loadtest-spec.schema.json).
const Contract = 1

// Spec is a loadtest spec (docs/loadtest.md, schemas/loadtest-spec.schema.json) with every field
// resolved to its value or default. Marshalled, it is the resolved spec the summary repeats.
type Spec struct {
	Contract   int    `json:"contract"`    // 1
	LoadtestID string `json:"loadtest_id"` // [a-z0-9-]{1,40}; default "lt-" + 8 random hex digits
	Protocol   string `json:"protocol"`    // one of the trial protocols (required)
	// Seed seeds the think times (and, with a page, the page's sizes and content); ≥ 0, default 1.
	Seed int64 `json:"seed"`
	// Lab is the page, network and server under test: the trial spec's fields of the same names
	// (engine/spec, their one owner). nil when the spec names no page (loadgen --target loads
	// whatever the target serves).
	*spec.Lab
	Client     Client   `json:"client"`
	Scenario   Scenario `json:"scenario"`
	Think      Think    `json:"think"`
	IntervalS  float64  `json:"interval_s"` // ≥ 0.1; default 10
	SLA        SLA      `json:"sla"`
	Thresholds []string `json:"thresholds"` // METRIC OP NUMBER (threshold.go); default []
	AtVUs      []int    `json:"at_vus"`     // VU counts whose interval's page times the outcomes report; default []
	Limits     Limits   `json:"limits"`
	// Target is an external site loaded instead of a lab server (docs/loadtest.md, "External
	// targets"); nil for a lab load test. Exclusive with the lab's page.
	Target *Target `json:"target,omitempty"`
	// AllowInternet lets Target reach addresses outside loopback and the run's namespaces. Set only
	// by --allow-internet on a command line (the control plane refuses it in a spec file).
	AllowInternet bool `json:"allow_internet"`
	// AccessNetwork is a target's network profile (the users' access link, emulated in front of
	// the egress router): the spec's network when it names a target instead of a page. Not
	// marshalled: the generator child does not emulate anything.
	AccessNetwork string `json:"-"`
	// RunServer is the address of this run's own lab server on a cluster worker (docs/loadtest.md,
	// "A Dask cluster"): a generator's target resolves there, and that one address is admitted as
	// the run's own without AllowInternet. Set only by --run-server on a command line.
	RunServer netip.Addr `json:"-"`
}

// Target is the spec's "target" object: an external site (docs/loadtest.md, "External targets").
type Target struct {
	URL           string            `json:"url"`
	Resolve       map[string]string `json:"resolve"`
	CA            string            `json:"ca"`
	Origins       []string          `json:"origins"`
	StatusURL     string            `json:"status_url"`
	StatusFormat  string            `json:"status_format"`
	StatusMetrics map[string]string `json:"status_metrics"`
}

// Client holds the virtual users' loader knobs.
type Client struct {
	MaxConnectionsPerOrigin int     `json:"max_connections_per_origin"` // HTTP/1.x, 1–64; default 6
	Connections             string  `json:"connections"`                // per_vu (default) | per_iteration
	TimeoutS                float64 `json:"timeout_s"`                  // a page's timeout, > 0; default 60
	DNS                     string  `json:"dns"`                        // static (default) | server (the lab's)
}

// Scenario is the load over time.
type Scenario struct {
	Model  string  `json:"model"`            // closed (default) | open
	Stages []Stage `json:"stages"`           // at least one
	Start  float64 `json:"start"`            // VUs (closed; default 1) or pages/s (open; default 0) before the first stage
	MaxVUs int     `json:"max_vus,omitzero"` // open model: the VU pool, ≥ 1; default 10000
}

// Stage is one stage: the VU count (closed) or the arrival rate (open) moves linearly from the
// previous stage's value to this one's over DurationS.
type Stage struct {
	DurationS float64  `json:"duration_s"`      // > 0
	Target    *int     `json:"target,omitzero"` // closed: VUs at the stage's end, ≥ 0
	Rate      *float64 `json:"rate,omitzero"`   // open: pages/s at the stage's end, ≥ 0
}

// Duration is the stage's length.
func (s Stage) Duration() time.Duration { return seconds(s.DurationS) }

// Think is the closed model's pause between a VU's pages.
type Think struct {
	Distribution string  `json:"distribution"` // fixed (default) | exponential
	MeanS        float64 `json:"mean_s"`       // ≥ 0; default 5
}

// SLA is the page-time objective whose first violation the outcomes report.
type SLA struct {
	PageMs    float64 `json:"page_ms"`   // > 0; default 3000
	Statistic string  `json:"statistic"` // p50 | p90 (default) | p95 | p99 | max | mean
}

// Limits bound a run: a spec that asks for more is refused.
type Limits struct {
	MaxDurationS float64 `json:"max_duration_s"` // > 0, ≤ 604800; default 7200
	MaxVUs       int     `json:"max_vus"`        // 1–1000000; default 20000
	// MaxRPS caps the responses in any one second of the run; above it the run stops at once
	// (RateCapError). 0: no cap (the default).
	MaxRPS float64 `json:"max_rps"`
}

// DefaultOpenMaxVUs is the open model's VU pool when the spec names none (a default the schema
// cannot state: it applies to one model only). Every other default is the schema's.
const DefaultOpenMaxVUs = 10000

// Decode reads a loadtest spec strictly against schemas/loadtest-spec.schema.json (engine/contract:
// unknown fields with the closest name, types, ranges, one *fielderr.Error naming the dotted
// path), takes its defaults from the schema, decodes the lab's fields as a trial spec's
// (spec.DecodeLab: their one definition), and checks what a schema cannot say: the stages against
// the limits, some VU or rate above zero, thresholds that parse.
func Decode(data []byte) (*Spec, error) {
	m, err := spec.Object(contract.LoadtestSpec, data)
	if err != nil {
		return nil, err
	}
	lab, err := spec.DecodeLab(m)
	if err != nil {
		return nil, err
	}
	network := "native"
	if n, ok := m["network"].(string); ok {
		network = n
	}
	for _, f := range spec.Fields {
		delete(m, f) // decoded above; the schema's defaults for them apply only with a page
	}
	sc, _ := m["scenario"].(map[string]any)
	if _, ok := sc["start"]; !ok { // the schema cannot say a default that depends on the model
		sc["start"] = json.Number(map[bool]string{true: "0", false: "1"}[sc["model"] == "open"])
	}
	if _, ok := sc["max_vus"]; !ok && sc["model"] == "open" {
		sc["max_vus"] = json.Number(strconv.Itoa(DefaultOpenMaxVUs))
	}
	if err := contract.ApplyDefaults(contract.LoadtestSpec, m); err != nil {
		return nil, err
	}
	s := &Spec{}
	if err := spec.Into(m, s, "loadtest spec"); err != nil {
		return nil, err
	}
	s.Lab = lab
	if s.Target != nil {
		if _, err := profile.Parse(network); err != nil {
			return nil, &fielderr.Error{Field: "network", Allowed: err.Error()}
		}
		s.AccessNetwork = network
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if s.LoadtestID == "" {
		s.LoadtestID = randomID()
	}
	return s, nil
}

// check is what the schema cannot say.
func (s *Spec) check() error {
	sc := s.Scenario
	open := sc.Model == "open"
	total, peak := 0.0, sc.Start
	for _, st := range sc.Stages {
		total += st.DurationS
		switch {
		case st.Rate != nil:
			peak = max(peak, *st.Rate)
		case st.Target != nil:
			peak = max(peak, float64(*st.Target))
		}
	}
	switch {
	case total > s.Limits.MaxDurationS:
		return &fielderr.Error{Field: "scenario.stages", Value: strconv.FormatFloat(total, 'g', -1, 64) + " s in all",
			Allowed: fmt.Sprintf("must last at most limits.max_duration_s (%g s)", s.Limits.MaxDurationS)}
	case !open && peak > float64(s.Limits.MaxVUs):
		return &fielderr.Error{Field: "scenario.stages", Value: fmt.Sprintf("%g VUs at the peak", peak),
			Allowed: fmt.Sprintf("must stay within limits.max_vus (%d)", s.Limits.MaxVUs)}
	case open && sc.MaxVUs > s.Limits.MaxVUs:
		return fielderr.New("scenario.max_vus", sc.MaxVUs, "must be at most limits.max_vus (%d)", s.Limits.MaxVUs)
	case peak == 0 && !open:
		return &fielderr.Error{Field: "scenario.stages", Value: "0 VUs throughout", Allowed: "at least one target (or start) must be ≥ 1"}
	case peak == 0:
		return &fielderr.Error{Field: "scenario.stages", Value: "0 pages/s throughout", Allowed: "at least one rate (or start) must be > 0"}
	}
	for i, expr := range s.Thresholds {
		if _, err := ParseThreshold(expr); err != nil {
			return fielderr.Prefix(fmt.Sprintf("thresholds[%d]", i), err)
		}
	}
	return nil
}

// Duration is the scenario's length: its stages end to end.
func (s Scenario) Duration() time.Duration {
	var d time.Duration
	for _, st := range s.Stages {
		d += st.Duration()
	}
	return d
}

// Interval is the length of an interval.
func (s *Spec) Interval() time.Duration { return seconds(s.IntervalS) }

// Timeout is a page's timeout.
func (s *Spec) Timeout() time.Duration { return seconds(s.Client.TimeoutS) }

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

func randomID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return "lt-" + hex.EncodeToString(b[:])
}
