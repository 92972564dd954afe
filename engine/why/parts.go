// Package why splits a page load's time on the wire into the mechanisms that held it back —
// connection setup, a request queued for a connection, the server, bytes moving at the bottleneck,
// the gateway's queue, the congestion window, loss recovery, head-of-line blocking, the loader's
// computation — and classifies the load's retransmissions by kind. It is sans-IO: Decompose takes
// the packet log of a load's window, the path's serialisers, the loader's request timeline and the
// server's records, all on the emulator's clock, and returns the parts, which sum to the interval
// exactly. docs/why.md is the design; docs/metrics.md defines each part.
package why

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/wirelab/wirelab/engine/internal/seam"
)

// Part is one mechanism of the decomposition.
type Part uint8

// The parts, in the order records, tables and figures list them.
const (
	DNS Part = iota
	Setup
	Queueing
	Server
	Transfer
	Gateway
	Window
	Recovery
	HoL
	Compute
	Unattributed
	NumParts
)

// Def describes a part: the one table every consumer of the vocabulary reads (the load record's
// keys, `wirelab-engine facts` for the control plane's columns, labels and explanations).
type Def struct {
	Key     string `json:"key"`     // the load record's key inside "why" (milliseconds)
	Label   string `json:"label"`   // a short display name
	Summary string `json:"summary"` // one line; docs/metrics.md has the definition
}

// Defs is the vocabulary, indexed by Part.
var Defs = [NumParts]Def{
	DNS:          {"dns_ms", "DNS", "name resolution the critical request waited for"},
	Setup:        {"setup_ms", "setup", "the TCP, TLS or QUIC handshake of the connection the critical request waited for"},
	Queueing:     {"queueing_ms", "queueing", "a ready request waiting for a connection or for stream credit"},
	Server:       {"server_ms", "server", "the server holding the response (request received, bytes not yet sent)"},
	Transfer:     {"transfer_ms", "transfer", "the bottleneck moving the load's bytes, or the last bytes on their way"},
	Gateway:      {"gateway_ms", "gateway", "the critical bytes waiting in the gateway's queue behind other packets"},
	Window:       {"window_ms", "window", "the path idle while the sender waited for acknowledgements (slow start, congestion or receive window)"},
	Recovery:     {"recovery_ms", "recovery", "the critical bytes lost and not yet repaired, or the sender busy repairing"},
	HoL:          {"hol_ms", "head-of-line", "the critical stream's bytes arrived but held behind another stream's lost segment on one TCP connection"},
	Compute:      {"compute_ms", "compute", "the loader's or browser's own work on the critical path (parsing, scripts, replay's computation)"},
	Unattributed: {"unattributed_ms", "unattributed", "time the inputs cannot place"},
}

// Keys lists the record keys in order.
func Keys() []string {
	out := make([]string, NumParts)
	for i, d := range Defs {
		out[i] = d.Key
	}
	return out
}

// PartOf returns the part whose record key is key.
func PartOf(key string) (Part, bool) {
	for i, d := range Defs {
		if d.Key == key {
			return Part(i), true
		}
	}
	return 0, false
}

func (p Part) String() string {
	if p < NumParts {
		return Defs[p].Label
	}
	return "part(" + strconv.Itoa(int(p)) + ")"
}

// MarshalText writes the part's record key (segments of the critical path name their part so).
func (p Part) MarshalText() ([]byte, error) {
	if p >= NumParts {
		return nil, fmt.Errorf("why: no part %d", p)
	}
	return []byte(Defs[p].Key), nil
}

// UnmarshalText reads a record key.
func (p *Part) UnmarshalText(b []byte) error {
	q, ok := PartOf(string(b))
	if !ok {
		return fmt.Errorf("why: unknown part %q", b)
	}
	*p = q
	return nil
}

// Parts are milliseconds per part.
type Parts [NumParts]float64

// Sum is the total.
func (p *Parts) Sum() float64 {
	s := 0.0
	for _, v := range p {
		s += v
	}
	return s
}

// MarshalJSON writes an object with every key in order, values rounded to the microsecond.
func (p Parts) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, v := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(Defs[i].Key))
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the object MarshalJSON writes; every key must be present and known.
func (p *Parts) UnmarshalJSON(b []byte) error {
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for k := range m {
		if _, ok := PartOf(k); !ok {
			return fmt.Errorf("why: unknown part %q", k)
		}
	}
	for i, d := range Defs {
		v, ok := m[d.Key]
		if !ok {
			return fmt.Errorf("why: part %q missing", d.Key)
		}
		p[i] = v
	}
	return nil
}

// Retx counts a load's retransmissions by kind (docs/why.md, "Retransmissions by kind"); declared
// in internal/seam, as the QUIC stacks report it across the loader's and the server's seams.
type Retx = seam.Retx
