package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/internal/suggest"
)

// The resolved form (docs/profile-grammar.md, part of the trial contract) is written by
// MarshalJSON exactly as documented and read back strictly: every field must be present (except
// those added later, which resolved forms written before them lack: tcpplus (0), ecn (false) and
// each direction's discipline (drop-tail)), unknown fields are refused (naming the closest known
// one), and DecodeResolved validates the values.

// MarshalJSON writes the documented resolved form; a nil origin map is written as {}.
func (r Resolved) MarshalJSON() ([]byte, error) {
	type wire Resolved // drops the methods
	w := wire(r)
	if w.OriginExtraRTT == nil {
		w.OriginExtraRTT = map[int]time.Duration{}
	}
	return json.Marshal(w)
}

type directionWire struct {
	Delay   time.Duration `json:"delay_ns"`
	Jitter  time.Duration `json:"jitter_ns"`
	RateBPS int64         `json:"rate_bps"`
	Trace   *string       `json:"trace"`
	Loss    Loss          `json:"loss"`
	Queue   QueueLimit    `json:"queue"`
	Disc    Discipline    `json:"discipline"`
}

// MarshalJSON writes a direction with trace null when there is none.
func (d Direction) MarshalJSON() ([]byte, error) {
	w := directionWire{Delay: d.Delay, Jitter: d.Jitter, RateBPS: d.RateBPS, Loss: d.Loss, Queue: d.Queue, Disc: d.Discipline}
	if w.Disc.Name == "" {
		w.Disc.Name = DropTail
	}
	if d.Trace != "" {
		t := d.Trace
		w.Trace = &t
	}
	return json.Marshal(w)
}

// MarshalJSON writes only the fields of the model: {"model":"none"}, {"model":"bernoulli","p":P}
// or {"model":"gilbert-elliott","p":P,"r":R,"one_minus_h":H1,"one_minus_k":K1}.
func (l Loss) MarshalJSON() ([]byte, error) {
	switch l.Model {
	case LossNone:
		return []byte(`{"model":"none"}`), nil
	case LossBernoulli:
		return json.Marshal(struct {
			Model string  `json:"model"`
			P     float64 `json:"p"`
		}{l.Model, l.P})
	case LossGilbertElliott:
		return json.Marshal(struct {
			Model     string  `json:"model"`
			P         float64 `json:"p"`
			R         float64 `json:"r"`
			OneMinusH float64 `json:"one_minus_h"`
			OneMinusK float64 `json:"one_minus_k"`
		}{l.Model, l.P, l.R, l.OneMinusH, l.OneMinusK})
	}
	return nil, fmt.Errorf("profile: unknown loss model %q", l.Model)
}

// disciplineFields lists the resolved form's fields of each discipline, after "name".
var disciplineFields = map[string][]string{
	DropTail:  nil,
	CoDel:     {"target_ns", "interval_ns"},
	FQCoDel:   {"target_ns", "interval_ns", "flows", "quantum"},
	PIE:       {"target_ns", "tupdate_ns", "alpha", "beta", "burst_ns"},
	DOCSISPIE: nil,
	RED:       {"min_bytes", "max_bytes", "probability", "weight", "adaptive"},
}

// MarshalJSON writes only the fields of the discipline: {"name":"droptail"},
// {"name":"codel","target_ns":T,"interval_ns":I}, … (docs/profile-grammar.md).
func (d Discipline) MarshalJSON() ([]byte, error) {
	fields, ok := disciplineFields[d.Name]
	if !ok {
		return nil, fmt.Errorf("profile: unknown queue discipline %q", d.Name)
	}
	var b bytes.Buffer
	b.WriteString(`{"name":`)
	name, _ := json.Marshal(d.Name)
	b.Write(name)
	for _, f := range fields {
		v, _ := json.Marshal(d.field(f))
		b.WriteString(`,"` + f + `":`)
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// field returns a pointer to the Go field behind a resolved form's field name.
func (d *Discipline) field(name string) any {
	switch name {
	case "target_ns":
		return &d.Target
	case "interval_ns":
		return &d.Interval
	case "flows":
		return &d.Flows
	case "quantum":
		return &d.Quantum
	case "tupdate_ns":
		return &d.TUpdate
	case "alpha":
		return &d.Alpha
	case "beta":
		return &d.Beta
	case "burst_ns":
		return &d.Burst
	case "min_bytes":
		return &d.MinBytes
	case "max_bytes":
		return &d.MaxBytes
	case "probability":
		return &d.Probability
	case "weight":
		return &d.Weight
	case "adaptive":
		return &d.Adaptive
	}
	return nil
}

// UnmarshalJSON reads a discipline strictly: exactly the fields its name has.
func (d *Discipline) UnmarshalJSON(data []byte) error { return decodeDiscipline("discipline", data, d) }

func decodeDiscipline(path string, data []byte, d *Discipline) error {
	var head struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return newError(path, abbreviate(data), "is not a discipline object", `write {"name":"droptail"}, {"name":"codel","target_ns":T,"interval_ns":I}, …`)
	}
	fields, ok := disciplineFields[head.Name]
	if !ok {
		return newError(join(path, "name"), head.Name, "is not a queue discipline", "use "+strings.Join(DisciplineNames(), ", "))
	}
	m, err := object(path, data, append([]string{"name"}, fields...)...)
	if err != nil {
		return err
	}
	out := Discipline{Name: head.Name}
	for _, f := range fields {
		if err := field(path, f, m[f], out.field(f), "a number (a boolean for adaptive)"); err != nil {
			return err
		}
	}
	*d = out
	return nil
}

// DecodeResolved reads a resolved profile from JSON strictly and validates it. Errors are *Error
// whose Field is the JSON path (e.g. "down.loss.p").
func DecodeResolved(data []byte) (Resolved, error) {
	var r Resolved
	if err := decodeResolved("", data, &r); err != nil {
		return Resolved{}, err
	}
	if err := r.Validate(); err != nil {
		return Resolved{}, err
	}
	return r, nil
}

// UnmarshalJSON reads the resolved form strictly (all fields, no unknown ones, right types). It
// does not check ranges: use DecodeResolved, or call Validate.
func (r *Resolved) UnmarshalJSON(data []byte) error { return decodeResolved("", data, r) }

// UnmarshalJSON reads one direction of the resolved form strictly.
func (d *Direction) UnmarshalJSON(data []byte) error { return decodeDirection("direction", data, d) }

// UnmarshalJSON reads a loss model strictly: exactly the fields its model has.
func (l *Loss) UnmarshalJSON(data []byte) error { return decodeLoss("loss", data, l) }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// object splits a JSON object into its fields, refusing unknown fields and requiring every field.
func object(path string, data []byte, fields ...string) (map[string]json.RawMessage, error) {
	return objectOptional(path, data, nil, fields...)
}

// objectOptional is object with fields that may be absent (listed in optional, known as well).
func objectOptional(path string, data []byte, optional []string, required ...string) (map[string]json.RawMessage, error) {
	fields := append(append([]string(nil), required...), optional...)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		name := path
		if name == "" {
			name = "profile"
		}
		return nil, newError(name, abbreviate(data), "is not a JSON object", "write an object with "+strings.Join(fields, ", "))
	}
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f] = true
	}
	unknown := make([]string, 0)
	for k := range m {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		allowed := suggest.DidYouMean(unknown[0], fields) + "fields are " + strings.Join(fields, ", ")
		return nil, newError(nameField(join(path, unknown[0]), nameField(path, "profile")), unknown[0], "is not a known field", allowed)
	}
	for _, f := range required {
		if _, ok := m[f]; !ok {
			return nil, newError(join(path, f), "", "is missing", "every field of the resolved form is required")
		}
	}
	return m, nil
}

func field(path, key string, raw json.RawMessage, dst any, allowed string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(dst); err != nil {
		return newError(join(path, key), abbreviate(raw), "has the wrong type", allowed)
	}
	return nil
}

func abbreviate(raw []byte) string {
	s := string(raw)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

func decodeResolved(path string, data []byte, r *Resolved) error {
	m, err := objectOptional(path, data, []string{"tcpplus", "ecn"}, "up", "down", "iw", "irw", "cc", "origin_extra_rtt_ns")
	if err != nil {
		return err
	}
	var out Resolved
	if err := decodeDirection(join(path, "up"), m["up"], &out.Up); err != nil {
		return err
	}
	if err := decodeDirection(join(path, "down"), m["down"], &out.Down); err != nil {
		return err
	}
	if err := field(path, "iw", m["iw"], &out.IW, "a whole number of segments, 0 = kernel default"); err != nil {
		return err
	}
	if err := field(path, "irw", m["irw"], &out.IRW, "a whole number of segments, 0 = kernel default"); err != nil {
		return err
	}
	if err := field(path, "cc", m["cc"], &out.CC, "a string: cubic, bbr or reno"); err != nil {
		return err
	}
	if raw, ok := m["tcpplus"]; ok {
		if err := field(path, "tcpplus", raw, &out.TCPPlus, "a whole number from 1 to 32, or 0 for off"); err != nil {
			return err
		}
	}
	if raw, ok := m["ecn"]; ok {
		if err := field(path, "ecn", raw, &out.ECN, "true or false"); err != nil {
			return err
		}
	}
	var origins map[string]time.Duration
	if err := field(path, "origin_extra_rtt_ns", m["origin_extra_rtt_ns"], &origins, `an object {"N": ns}`); err != nil {
		return err
	}
	out.OriginExtraRTT = make(map[int]time.Duration, len(origins))
	for k, v := range origins {
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 || n > MaxOrigin || strconv.Itoa(n) != k {
			return newError(join(path, "origin_extra_rtt_ns"), k, "is not an origin number", "keys are origin numbers 1 to 64 written as strings")
		}
		out.OriginExtraRTT[n] = v
	}
	*r = out
	return nil
}

func decodeDirection(path string, data []byte, d *Direction) error {
	m, err := objectOptional(path, data, []string{"discipline"}, "delay_ns", "jitter_ns", "rate_bps", "trace", "loss", "queue")
	if err != nil {
		return err
	}
	var w directionWire
	for _, f := range []struct {
		key string
		dst any
	}{{"delay_ns", &w.Delay}, {"jitter_ns", &w.Jitter}, {"rate_bps", &w.RateBPS}} {
		if err := field(path, f.key, m[f.key], f.dst, "a whole number"); err != nil {
			return err
		}
	}
	if err := field(path, "trace", m["trace"], &w.Trace, "a path string or null"); err != nil {
		return err
	}
	if err := decodeLoss(join(path, "loss"), m["loss"], &w.Loss); err != nil {
		return err
	}
	qm, err := object(join(path, "queue"), m["queue"], "packets", "bytes")
	if err != nil {
		return err
	}
	if err := field(join(path, "queue"), "packets", qm["packets"], &w.Queue.Packets, "a whole number of packets, 0 = no limit"); err != nil {
		return err
	}
	if err := field(join(path, "queue"), "bytes", qm["bytes"], &w.Queue.Bytes, "a whole number of bytes, 0 = no limit"); err != nil {
		return err
	}
	w.Disc = Discipline{Name: DropTail}
	if raw, ok := m["discipline"]; ok {
		if err := decodeDiscipline(join(path, "discipline"), raw, &w.Disc); err != nil {
			return err
		}
	}
	*d = Direction{Delay: w.Delay, Jitter: w.Jitter, RateBPS: w.RateBPS, Loss: w.Loss, Queue: w.Queue, Discipline: w.Disc}
	if w.Trace != nil {
		d.Trace = *w.Trace
		if d.Trace == "" {
			return newError(join(path, "trace"), "", "is an empty path", "a path string, or null for none")
		}
	}
	return nil
}

func decodeLoss(path string, data []byte, l *Loss) error {
	var head struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return newError(path, abbreviate(data), "is not a loss model object", `write {"model":"none"}, {"model":"bernoulli","p":P} or {"model":"gilbert-elliott",…}`)
	}
	var fields []string
	switch head.Model {
	case LossNone:
		fields = []string{"model"}
	case LossBernoulli:
		fields = []string{"model", "p"}
	case LossGilbertElliott:
		fields = []string{"model", "p", "r", "one_minus_h", "one_minus_k"}
	default:
		return newError(join(path, "model"), head.Model, "is not a loss model", "use none, bernoulli or gilbert-elliott")
	}
	m, err := object(path, data, fields...)
	if err != nil {
		return err
	}
	out := Loss{Model: head.Model}
	dst := map[string]*float64{"p": &out.P, "r": &out.R, "one_minus_h": &out.OneMinusH, "one_minus_k": &out.OneMinusK}
	for _, f := range fields[1:] {
		if err := field(path, f, m[f], dst[f], "a probability between 0 and 1"); err != nil {
			return err
		}
	}
	*l = out
	return nil
}
