package profile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/internal/suggest"
	"github.com/wirelab/wirelab/engine/internal/units"
)

// Queue discipline names, as in the grammar (queue=NAME[:LIMIT]) and the resolved form.
const (
	DropTail  = "droptail"
	CoDel     = "codel"
	FQCoDel   = "fq_codel"
	PIE       = "pie"
	DOCSISPIE = "docsis_pie"
	RED       = "red"
)

// Discipline is the gateway queue's algorithm and its parameters (docs/network.md, "Queue
// disciplines"). Which fields are meaningful depends on Name; the others are zero. Every field
// of a discipline is set (Parse fills in the defaults of DisciplineInfo), so a resolved profile
// says exactly what ran.
type Discipline struct {
	Name string // DropTail, CoDel, FQCoDel, PIE, DOCSISPIE or RED

	// CoDel and FQ-CoDel (codel_target, codel_interval); PIE's target (pie_target).
	Target   time.Duration
	Interval time.Duration
	// FQ-CoDel: hash buckets (fq_flows) and the DRR quantum in bytes (fq_quantum).
	Flows   int
	Quantum int
	// PIE: the probability update period (pie_tupdate), the controller's weights α and β in
	// multiples of 1/16 as Linux counts them (pie_alpha, pie_beta), the burst allowance (pie_burst).
	TUpdate     time.Duration
	Alpha, Beta float64
	Burst       time.Duration
	// RED: thresholds of the average queue in bytes (red_min, red_max), the drop probability at
	// red_max (red_probability), the EWMA weight of the average (red_weight), Adaptive RED's
	// adjustment of the probability (red_adaptive). 0 thresholds and weight are automatic: from
	// the link's rate C (full-size packets per second), red_min = max(5 packets, 5 ms × C / 2),
	// red_max = 3 × red_min (or red_max / 3 for a given red_max), weight 1 − exp(−1/C).
	MinBytes, MaxBytes int64
	Probability        float64
	Weight             float64
	Adaptive           bool
}

// DisciplineInfo describes one discipline: its default limit and parameters and the parameter
// keys it takes. DefaultLimit of DOCSISPIE is zero: its buffer is sized from the link's rate
// (docs/network.md).
type DisciplineInfo struct {
	Name         string
	About        string     // one line for docs and errors
	DefaultLimit QueueLimit // the limit of queue=NAME without one
	Defaults     Discipline // the parameters of queue=NAME
	Keys         []string   // parameter keys that apply to it
}

// Linux's defaults (sch_codel.c, sch_fq_codel.c, pie.h) and RFC 8034's constants. RED has none in
// Linux (tc requires them): its thresholds and weight default to 0, which the link model resolves
// from the link's rate as Adaptive RED (Floyd, Gummadi and Shenker 2001) does — RED's Probability
// default is Linux's tc (2 %).
var (
	codelTarget   = 5 * time.Millisecond
	codelInterval = 100 * time.Millisecond
)

// Disciplines lists every discipline in documented order: the one place a discipline's name,
// defaults and keys are written (the engine's link model builds each from its entry; `profiles
// ls` prints them for the control plane).
var Disciplines = []DisciplineInfo{
	{DropTail, "drop-tail FIFO: refuses an arriving packet that does not fit", QueueLimit{Packets: DefaultQueueSize},
		Discipline{Name: DropTail}, nil},
	{CoDel, "CoDel (RFC 8289): drops at dequeue once the sojourn time stays above target for an interval", QueueLimit{Packets: 1000},
		Discipline{Name: CoDel, Target: codelTarget, Interval: codelInterval}, []string{"codel_target", "codel_interval"}},
	{FQCoDel, "FQ-CoDel (RFC 8290): per-flow queues served by deficit round robin, CoDel on each", QueueLimit{Packets: 10240},
		Discipline{Name: FQCoDel, Target: codelTarget, Interval: codelInterval, Flows: 1024, Quantum: 1514},
		[]string{"codel_target", "codel_interval", "fq_flows", "fq_quantum"}},
	{PIE, "PIE (RFC 8033) with Linux's defaults: drops at enqueue with a probability a PI controller keeps on the delay target", QueueLimit{Packets: 1000},
		Discipline{Name: PIE, Target: 15 * time.Millisecond, TUpdate: 15 * time.Millisecond, Alpha: 0.125, Beta: 1.25, Burst: 150 * time.Millisecond},
		[]string{"pie_target", "pie_tupdate", "pie_alpha", "pie_beta", "pie_burst"}},
	{DOCSISPIE, "DOCSIS-PIE (RFC 8034): PIE as DOCSIS 3.1 cable modems run it, with RFC 8034's constants", QueueLimit{},
		Discipline{Name: DOCSISPIE}, nil},
	{RED, "RED (Floyd and Jacobson 1993): drops with a probability growing linearly with the average queue between two thresholds", QueueLimit{Packets: 1000},
		Discipline{Name: RED, Probability: 0.02}, // thresholds and weight 0: from the link's rate (Adaptive RED's rule)
		[]string{"red_min", "red_max", "red_probability", "red_weight", "red_adaptive"}},
}

var disciplineIndex = func() map[string]*DisciplineInfo {
	m := make(map[string]*DisciplineInfo, len(Disciplines))
	for i := range Disciplines {
		m[Disciplines[i].Name] = &Disciplines[i]
	}
	return m
}()

// LookupDiscipline returns the entry of a discipline name.
func LookupDiscipline(name string) (DisciplineInfo, bool) {
	d, ok := disciplineIndex[name]
	if !ok {
		return DisciplineInfo{}, false
	}
	return *d, true
}

// DisciplineNames lists the discipline names in documented order.
func DisciplineNames() []string {
	out := make([]string, len(Disciplines))
	for i, d := range Disciplines {
		out[i] = d.Name
	}
	return out
}

// Limits of the discipline parameters (docs/profile-grammar.md).
const (
	MinCoDelTime   = 10 * time.Microsecond // codel_target, codel_interval: CoDel counts 1024 ns units
	MaxCoDelTime   = 60 * time.Second
	MaxFQFlows     = 65536 // Linux's limit
	MinFQQuantum   = 256   // Linux raises smaller quanta to 256
	MaxFQQuantum   = 1 << 20
	MinPIETUpdate  = 100 * time.Microsecond
	MaxPIETime     = 60 * time.Second // pie_target, pie_tupdate, pie_burst
	MaxPIEWeight   = 4                // pie_alpha, pie_beta, in multiples of 1/16
	MinREDBytes    = 100
	MaxREDBytes    = MaxQueueBytes
	DefaultLinkMTU = 1500 // bytes of the largest IP packet the link carries
)

// paramKey is one discipline parameter key of the grammar.
type paramKey struct {
	name      string
	automatic bool // its zero value is valid: the link model derives it (RED's thresholds and weight)
	info      ParamInfo
	allowed   string
	parse     func(field, value string) (any, error)
	get       func(*Discipline) any
	set       func(*Discipline, any)
	format    func(any) string
}

// typed completes a key whose value is a T in the Discipline (get points at it), printed by format.
func typed[T any](k paramKey, get func(*Discipline) *T, format func(T) string) paramKey {
	k.get = func(d *Discipline) any { return *get(d) }
	k.set = func(d *Discipline, v any) { *get(d) = v.(T) }
	k.format = func(v any) string { return format(v.(T)) }
	return k
}

func durationParam(lo, hi time.Duration, get func(*Discipline) *time.Duration) func(string) paramKey {
	allowed := fmt.Sprintf("use a duration from %s to %s (e.g. %s)", formatDuration(lo), formatDuration(hi), "5ms")
	return func(name string) paramKey {
		return typed(paramKey{name: name, allowed: allowed, info: ParamInfo{Kind: "duration", Min: int64(lo), Max: int64(hi)},
			parse: func(f, v string) (any, error) {
				d, err := parseDuration(f, v)
				if err != nil {
					e := err.(*Error)
					return nil, newError(f, v, e.Problem, allowed)
				}
				if d < lo || d > hi {
					return nil, newError(f, v, "is out of range", allowed)
				}
				return d, nil
			},
		}, get, formatDuration)
	}
}

func intParam(lo, hi int, unit string, get func(*Discipline) *int) func(string) paramKey {
	allowed := fmt.Sprintf("use a whole number%s from %d to %d", unit, lo, hi)
	return func(name string) paramKey {
		return typed(paramKey{name: name, allowed: allowed, info: ParamInfo{Kind: "int", Min: int64(lo), Max: int64(hi)},
			parse: func(f, v string) (any, error) {
				if v == "" {
					return nil, newError(f, v, "is empty", allowed)
				}
				if !units.AllDigits(v) {
					return nil, newError(f, v, "is not a whole number", allowed)
				}
				n := hi + 1
				if len(strings.TrimLeft(v, "0")) <= 9 {
					n, _ = strconv.Atoi(v)
				}
				if n < lo || n > hi {
					return nil, newError(f, v, "is out of range", allowed)
				}
				return n, nil
			},
		}, get, strconv.Itoa)
	}
}

// sixteenthsParam parses PIE's α and β: a NUMBER that is a whole multiple of 1/16 (Linux keeps them
// as integers in sixteenths), above 0 and at most MaxPIEWeight.
func sixteenthsParam(get func(*Discipline) *float64) func(string) paramKey {
	allowed := fmt.Sprintf("use a multiple of 0.0625 (1/16, as Linux counts it) above 0 and at most %d (e.g. 0.125)", MaxPIEWeight)
	return func(name string) paramKey {
		return typed(paramKey{name: name, allowed: allowed, info: ParamInfo{Kind: "sixteenths", Min: 1, Max: MaxPIEWeight * 16},
			parse: func(f, v string) (any, error) {
				d, unit, err := paramNumber(f, v, allowed)
				if err != nil {
					return nil, err
				}
				if unit != "" {
					return nil, newError(f, v, fmt.Sprintf("has an unknown unit %q", unit), allowed)
				}
				if d.IsZero() || d.CmpScaled(1, MaxPIEWeight) > 0 {
					return nil, newError(f, v, "is out of range", allowed)
				}
				if _, exact := d.RoundScaled(16); !exact {
					return nil, newError(f, v, "is not a multiple of 1/16", allowed)
				}
				return d.Float(0), nil
			},
		}, get, formatProb)
	}
}

// paramNumber reads a key's NUMBER[UNIT] (empty, or not a number: an error naming the key).
func paramNumber(f, v, allowed string) (units.Decimal, string, error) {
	if v == "" {
		return units.Decimal{}, "", newError(f, v, "is empty", allowed)
	}
	d, unit, problem := parseNumberUnit(v)
	if problem != "" {
		return units.Decimal{}, "", newError(f, v, problem, allowed)
	}
	return d, unit, nil
}

func probParam(get func(*Discipline) *float64) func(string) paramKey {
	allowed := "use a percentage (2%) or a fraction (0.02) above 0 and at most 1"
	return func(name string) paramKey {
		return typed(paramKey{name: name, allowed: allowed, info: ParamInfo{Kind: "probability"},
			parse: func(f, v string) (any, error) {
				p, err := parseProb(f, v, v, "")
				if err != nil {
					e := err.(*Error)
					return nil, newError(f, v, e.Problem, allowed)
				}
				if p == 0 {
					return nil, newError(f, v, "is zero", allowed)
				}
				return p, nil
			},
		}, get, formatProb)
	}
}

func sizeParam(get func(*Discipline) *int64) func(string) paramKey {
	allowed := fmt.Sprintf("use a size in B, kB, KiB, MB or MiB from %dB (e.g. 30kB)", MinREDBytes)
	return func(name string) paramKey {
		return typed(paramKey{name: name, allowed: allowed, info: ParamInfo{Kind: "size", Min: MinREDBytes, Max: MaxREDBytes},
			parse: func(f, v string) (any, error) {
				d, unit, err := paramNumber(f, v, allowed)
				if err != nil {
					return nil, err
				}
				mult, ok := units.Lookup(units.Sizes, unit)
				if !ok {
					if unit == "" {
						return nil, newError(f, v, "has no unit", allowed)
					}
					return nil, newError(f, v, fmt.Sprintf("has an unknown unit %q (units are case-sensitive)", unit), allowed)
				}
				if d.CmpScaled(mult, MinREDBytes) < 0 || d.CmpScaled(mult, MaxREDBytes) > 0 {
					return nil, newError(f, v, "is out of range", allowed)
				}
				n, exact := d.RoundScaled(mult)
				if !exact {
					return nil, newError(f, v, "is not a whole number of bytes", allowed)
				}
				return n, nil
			},
		}, get, units.FormatSize)
	}
}

func boolParam(get func(*Discipline) *bool) func(string) paramKey {
	const allowed = "use 1 (on) or 0 (off)"
	return func(name string) paramKey {
		return typed(paramKey{name: name, allowed: allowed, info: ParamInfo{Kind: "switch", Min: 0, Max: 1},
			parse: func(f, v string) (any, error) { return parseSwitch(f, v, allowed) },
		}, get, formatSwitch)
	}
}

func parseSwitch(field, v, allowed string) (bool, error) {
	switch v {
	case "1":
		return true, nil
	case "0":
		return false, nil
	case "":
		return false, newError(field, v, "is empty", allowed)
	}
	return false, newError(field, v, "is not 0 or 1", allowed)
}

func formatSwitch(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func auto(k paramKey) paramKey {
	k.automatic = true
	k.info.Automatic = true
	return k
}

// paramKeys in documented order: the grammar's discipline parameter keys.
var paramKeys = func() []paramKey {
	mk := func(name string, f func(string) paramKey) paramKey { return f(name) }
	return []paramKey{
		mk("codel_target", durationParam(MinCoDelTime, MaxCoDelTime, func(d *Discipline) *time.Duration { return &d.Target })),
		mk("codel_interval", durationParam(MinCoDelTime, MaxCoDelTime, func(d *Discipline) *time.Duration { return &d.Interval })),
		mk("fq_flows", intParam(1, MaxFQFlows, "", func(d *Discipline) *int { return &d.Flows })),
		mk("fq_quantum", intParam(MinFQQuantum, MaxFQQuantum, " of bytes", func(d *Discipline) *int { return &d.Quantum })),
		mk("pie_target", durationParam(time.Microsecond, MaxPIETime, func(d *Discipline) *time.Duration { return &d.Target })),
		mk("pie_tupdate", durationParam(MinPIETUpdate, MaxPIETime, func(d *Discipline) *time.Duration { return &d.TUpdate })),
		mk("pie_alpha", sixteenthsParam(func(d *Discipline) *float64 { return &d.Alpha })),
		mk("pie_beta", sixteenthsParam(func(d *Discipline) *float64 { return &d.Beta })),
		mk("pie_burst", durationParam(0, MaxPIETime, func(d *Discipline) *time.Duration { return &d.Burst })),
		auto(mk("red_min", sizeParam(func(d *Discipline) *int64 { return &d.MinBytes }))),
		auto(mk("red_max", sizeParam(func(d *Discipline) *int64 { return &d.MaxBytes }))),
		mk("red_probability", probParam(func(d *Discipline) *float64 { return &d.Probability })),
		auto(mk("red_weight", probParam(func(d *Discipline) *float64 { return &d.Weight }))),
		mk("red_adaptive", boolParam(func(d *Discipline) *bool { return &d.Adaptive })),
	}
}()

// ParamInfo describes a discipline parameter key for the control plane's twin of the grammar
// (`profiles ls`): its kind — duration (ns), int, sixteenths (a multiple of 1/16, Min and Max in
// sixteenths), probability (above 0, at most 1), size (bytes) or switch (0 or 1) — its range, the
// resolved form's field it sets and the disciplines it applies to.
type ParamInfo struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	Min         int64    `json:"min"`
	Max         int64    `json:"max"`
	Field       string   `json:"field"`
	Disciplines []string `json:"disciplines"`
	// Allowed is what an error about the key's value says is allowed (the twin repeats it).
	Allowed string `json:"allowed"`
	// Automatic: the resolved form may hold 0, which the link model derives (from the rate).
	Automatic bool `json:"automatic"`
}

// ParamKeys describes the discipline parameter keys in documented order.
func ParamKeys() []ParamInfo {
	out := make([]ParamInfo, len(paramKeys))
	for i, pk := range paramKeys {
		out[i] = pk.info
		out[i].Name, out[i].Field, out[i].Disciplines = pk.name, jsonParamName(pk.name), disciplinesOf(pk.name)
		out[i].Allowed = pk.allowed
	}
	return out
}

var paramIndex = func() map[string]*paramKey {
	m := make(map[string]*paramKey, len(paramKeys))
	for i := range paramKeys {
		m[paramKeys[i].name] = &paramKeys[i]
	}
	return m
}()

// disciplinesOf lists the disciplines a parameter key applies to.
func disciplinesOf(key string) []string {
	var out []string
	for _, d := range Disciplines {
		if slices.Contains(d.Keys, key) {
			out = append(out, d.Name)
		}
	}
	return out
}

// keys are the parameter keys of the discipline (none for an unknown name).
func (d Discipline) keys() []string {
	if info, ok := disciplineIndex[d.Name]; ok {
		return info.Keys
	}
	return nil
}

func (d Discipline) hasKey(key string) bool { return slices.Contains(d.keys(), key) }

// hasField reports whether one of the discipline's keys sets the resolved form's field (codel_target
// and pie_target share target_ns).
func (d Discipline) hasField(field string) bool {
	return slices.ContainsFunc(d.keys(), func(k string) bool { return jsonParamName(k) == field })
}

// setParam applies a discipline parameter key to every direction whose discipline takes it.
func (r *Resolved) setParam(key, value string) error {
	pk := paramIndex[key]
	v, err := pk.parse(key, value)
	if err != nil {
		return err
	}
	applied := false
	for _, d := range []*Direction{&r.Up, &r.Down} {
		if d.Discipline.hasKey(key) {
			pk.set(&d.Discipline, v)
			applied = true
		}
	}
	if !applied {
		names := disciplinesOf(key)
		return newError(key, value, fmt.Sprintf("applies to queue=%s, which neither direction uses", strings.Join(names, " or queue=")),
			fmt.Sprintf("set queue=%s before it (items apply left to right)", names[0]))
	}
	return nil
}

// queueItemAllowed is what a queue item may be.
var queueItemAllowed = "use a discipline (" + strings.Join(DisciplineNames(), ", ") + ") with an optional :LIMIT, " +
	"or a drop-tail LIMIT alone: packets (256, 256p), bytes (64kB, 64KiB, 1MB, at least " + strconv.Itoa(MinQueueBytes) +
	"B), both (100/150000B), or infinite"

// parseQueueItem parses QUEUE := LIMIT | DISCIPLINE [":" LIMIT] into a discipline with its default
// parameters and the queue limit.
func parseQueueItem(field, s string) (Discipline, QueueLimit, error) {
	name, limit, hasLimit := strings.Cut(s, ":")
	info, isName := disciplineIndex[name]
	if !isName {
		// A word that is not a limit: an unknown discipline when it has a limit after it or looks
		// like a discipline's name, else the limit's own error ("not a number").
		near := suggest.Closest(name, DisciplineNames()) != ""
		if (hasLimit && !startsNumeric(name)) || (near && !startsNumeric(s)) {
			return Discipline{}, QueueLimit{}, newError(field, s, fmt.Sprintf("names an unknown discipline %q", name),
				suggest.DidYouMean(name, DisciplineNames())+queueItemAllowed)
		}
		q, err := parseQueue(field, s)
		if err != nil {
			return Discipline{}, QueueLimit{}, err
		}
		return Discipline{Name: DropTail}, q, nil
	}
	q := info.DefaultLimit
	if hasLimit {
		var err error
		if q, err = parseQueue(field, limit); err != nil {
			e := err.(*Error)
			return Discipline{}, QueueLimit{}, newError(field, s, "has a limit that "+e.Problem, e.Allowed)
		}
		if name == DOCSISPIE && q.Infinite() {
			return Discipline{}, QueueLimit{}, newError(field, s, "has no buffer size",
				"docsis_pie needs a buffer: give a limit (docsis_pie:100kB) or none (100 ms at the link's rate)")
		}
	}
	return info.Defaults, q, nil
}

func startsNumeric(s string) bool {
	return s != "" && (units.IsDigit(s[0]) || s[0] == '-' || s[0] == '+' || s[0] == '.')
}

// validate checks a discipline's name and parameter ranges; path is its JSON path.
func (d Discipline) validate(path string) error {
	if _, ok := disciplineIndex[d.Name]; !ok {
		return newError(path+".name", d.Name, "is not a queue discipline", "use "+strings.Join(DisciplineNames(), ", "))
	}
	// Every parameter the discipline does not take must be zero, every one it takes in range.
	for _, pk := range paramKeys {
		has := d.hasKey(pk.name)
		v := pk.get(&d)
		if !has {
			if v != pk.get(&Discipline{}) && !d.hasField(jsonParamName(pk.name)) {
				return newError(path+"."+jsonParamName(pk.name), pk.format(v), "is set", d.Name+" has no "+pk.name)
			}
			continue
		}
		if pk.automatic && v == pk.get(&Discipline{}) {
			continue // 0: from the link's rate
		}
		if _, err := pk.parse(pk.name, pk.format(v)); err != nil {
			return newError(path+"."+jsonParamName(pk.name), pk.format(v), "is out of range", err.(*Error).Allowed)
		}
	}
	switch d.Name {
	case CoDel, FQCoDel:
		if d.Target >= d.Interval {
			return newError(path+".target_ns", strconv.FormatInt(int64(d.Target), 10), "is not below the interval",
				fmt.Sprintf("CoDel's target must be shorter than its interval (%s)", formatDuration(d.Interval)))
		}
	case RED:
		if d.MinBytes != 0 && d.MaxBytes != 0 && d.MinBytes >= d.MaxBytes {
			return newError(path+".min_bytes", strconv.FormatInt(d.MinBytes, 10), "is not below red_max",
				fmt.Sprintf("RED's thresholds need red_min < red_max (%s)", units.FormatSize(d.MaxBytes)))
		}
	}
	return nil
}

// DOCSISPIEBuffer is the buffer of docsis_pie without a limit: DOCSIS 3.1's default target buffer
// (100 ms at the configured rate).
const DOCSISPIEBuffer = 100 * time.Millisecond

// jsonParamName is the resolved form's name of a parameter key's field.
func jsonParamName(key string) string {
	switch key {
	case "codel_target", "pie_target":
		return "target_ns"
	case "codel_interval":
		return "interval_ns"
	case "fq_flows":
		return "flows"
	case "fq_quantum":
		return "quantum"
	case "pie_tupdate":
		return "tupdate_ns"
	case "pie_alpha":
		return "alpha"
	case "pie_beta":
		return "beta"
	case "pie_burst":
		return "burst_ns"
	case "red_min":
		return "min_bytes"
	case "red_max":
		return "max_bytes"
	case "red_probability":
		return "probability"
	case "red_weight":
		return "weight"
	case "red_adaptive":
		return "adaptive"
	}
	return key
}

// checkShared refuses directions that give one parameter key two values: a key sets every
// direction that has it, so such a profile has no profile string (Resolved.String). Parse reports
// the key (a queue item after the parameter reset one direction), Validate the JSON path.
func (r *Resolved) checkShared(parsing bool) error {
	for _, pk := range paramKeys {
		if r.Up.Discipline.hasKey(pk.name) && r.Down.Discipline.hasKey(pk.name) {
			u, d := pk.get(&r.Up.Discipline), pk.get(&r.Down.Discipline)
			if u == d {
				continue
			}
			if parsing {
				return newError(pk.name, pk.format(u), "is the up direction's, and "+pk.format(d)+" the down direction's",
					pk.name+" sets both directions: write it after the queue items it applies to")
			}
			return newError("down.discipline."+jsonParamName(pk.name), pk.format(d), "differs from the up direction's "+pk.format(u),
				pk.name+" applies to both directions: give them one value")
		}
	}
	return nil
}

// checkDisciplines runs the checks that need the whole profile (after Parse has applied every
// item): RED's thresholds in order, CoDel's target below its interval.
func (r *Resolved) checkDisciplines() error {
	for _, d := range []Direction{r.Up, r.Down} {
		switch d.Discipline.Name {
		case RED:
			if d.Discipline.MinBytes != 0 && d.Discipline.MaxBytes != 0 && d.Discipline.MinBytes >= d.Discipline.MaxBytes {
				return newError("red_min", units.FormatSize(d.Discipline.MinBytes), "is not below red_max "+units.FormatSize(d.Discipline.MaxBytes),
					"RED needs red_min < red_max")
			}
		case CoDel, FQCoDel:
			if d.Discipline.Target >= d.Discipline.Interval {
				return newError("codel_target", formatDuration(d.Discipline.Target), "is not below codel_interval "+formatDuration(d.Discipline.Interval),
					"CoDel's target must be shorter than its interval (defaults 5ms and 100ms)")
			}
		}
	}
	return nil
}

// formatQueueItem writes a direction's queue key value: the limit alone for drop-tail, else
// NAME[:LIMIT] (the limit omitted when it is the discipline's default).
func formatQueueItem(d Direction) string {
	name := d.Discipline.Name
	if name == "" || name == DropTail {
		return formatQueue(d.Queue)
	}
	if info := disciplineIndex[name]; d.Queue == info.DefaultLimit {
		return name
	}
	return name + ":" + formatQueue(d.Queue)
}

// queueState is what String compares to decide whether a direction's queue is the default.
type queueState struct {
	limit QueueLimit
	name  string
}

func queueOf(d Direction) queueState {
	name := d.Discipline.Name
	if name == "" {
		name = DropTail
	}
	return queueState{d.Queue, name}
}

// paramItems writes the parameter keys whose values differ from their disciplines' defaults.
func paramItems(r Resolved) []string {
	var items []string
	for _, pk := range paramKeys {
		for _, d := range []Discipline{r.Up.Discipline, r.Down.Discipline} {
			if !d.hasKey(pk.name) {
				continue
			}
			def := disciplineIndex[d.Name].Defaults
			if v := pk.get(&d); v != pk.get(&def) {
				items = append(items, pk.name+"="+pk.format(v))
			}
			break // both directions have the same value (checkShared)
		}
	}
	return items
}

// Validate checks a discipline; see Resolved.Validate. Field names start with "discipline".
func (d Discipline) Validate() error { return d.validate("discipline") }
