package profile

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Validate checks that r is a profile the grammar could have produced: every value in range, a
// trace and a rate not both set, Bernoulli loss of 0 written as none. Parse's results always pass.
// Errors are *Error whose Field is the JSON path of the resolved form (e.g. "down.queue.bytes").
func (r Resolved) Validate() error {
	if err := r.Up.validate("up"); err != nil {
		return err
	}
	if err := r.Down.validate("down"); err != nil {
		return err
	}
	if err := validateWindow("iw", r.IW); err != nil {
		return err
	}
	if err := validateWindow("irw", r.IRW); err != nil {
		return err
	}
	if _, err := parseCC("cc", r.CC); err != nil {
		return err
	}
	if r.TCPPlus < 0 || r.TCPPlus > MaxTCPPlus {
		return newError("tcpplus", strconv.Itoa(r.TCPPlus), "is out of range", "a whole number from 1 to 32, or 0 for off")
	}
	if err := r.checkTCPPlus("tcpplus"); err != nil {
		return err
	}
	if err := r.checkShared(false); err != nil {
		return err
	}
	for n, d := range r.OriginExtraRTT {
		field := "origin_extra_rtt_ns." + strconv.Itoa(n)
		if n < 1 || n > MaxOrigin {
			return newError("origin_extra_rtt_ns", strconv.Itoa(n), "is not an origin number", "origins are numbered from 1 to 64")
		}
		if err := validateDuration(field, d); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks one direction; see Resolved.Validate. Field names start with "direction".
func (d Direction) Validate() error { return d.validate("direction") }

func (d Direction) validate(path string) error {
	if err := validateDuration(path+".delay_ns", d.Delay); err != nil {
		return err
	}
	if err := validateDuration(path+".jitter_ns", d.Jitter); err != nil {
		return err
	}
	if d.RateBPS != 0 && (d.RateBPS < MinRateBPS || d.RateBPS > MaxRateBPS) {
		return newError(path+".rate_bps", strconv.FormatInt(d.RateBPS, 10), "is out of range", "bits/s from 1000 to 100000000000, or 0 for unlimited")
	}
	if d.Trace != "" {
		if d.RateBPS != 0 {
			return newError(path+".trace", d.Trace, "is set together with a rate", "a trace replaces the rate: rate_bps must be 0")
		}
		if problem := pathProblem(d.Trace); problem != "" {
			return newError(path+".trace", d.Trace, problem, "a UTF-8 path without commas, control characters or blanks around it")
		}
	}
	if err := d.Loss.validate(path + ".loss"); err != nil {
		return err
	}
	if err := d.Queue.validate(path + ".queue"); err != nil {
		return err
	}
	return d.Discipline.validate(path + ".discipline")
}

func validateDuration(field string, d time.Duration) error {
	if d < 0 || d > MaxDuration {
		return newError(field, strconv.FormatInt(int64(d), 10), "is out of range", "nanoseconds from 0 to 3600000000000 (1 h)")
	}
	return nil
}

func validateWindow(field string, n int) error {
	if n < 0 || n > MaxWindow {
		return newError(field, strconv.Itoa(n), "is out of range", "segments from 1 to 1000, or 0 for the kernel default")
	}
	return nil
}

func validateProb(field string, p float64) error {
	if math.IsNaN(p) || p < 0 || p > 1 {
		return newError(field, strconv.FormatFloat(p, 'g', -1, 64), "is not a probability", "a number between 0 and 1")
	}
	return nil
}

// Validate checks a loss model; see Resolved.Validate. Field names start with "loss".
func (l Loss) Validate() error { return l.validate("loss") }

func (l Loss) validate(path string) error {
	switch l.Model {
	case LossNone:
		if l.P != 0 || l.R != 0 || l.OneMinusH != 0 || l.OneMinusK != 0 {
			return newError(path+".model", l.Model, "has parameters", "model none has no parameters")
		}
		return nil
	case LossBernoulli:
		if err := validateProb(path+".p", l.P); err != nil {
			return err
		}
		if l.P == 0 {
			return newError(path+".p", "0", "is zero", `a Bernoulli loss of 0 is written {"model":"none"}`)
		}
		if l.R != 0 || l.OneMinusH != 0 || l.OneMinusK != 0 {
			return newError(path+".model", l.Model, "has Gilbert–Elliott parameters", "bernoulli has only p")
		}
		return nil
	case LossGilbertElliott:
		for _, f := range []struct {
			name string
			v    float64
		}{{"p", l.P}, {"r", l.R}, {"one_minus_h", l.OneMinusH}, {"one_minus_k", l.OneMinusK}} {
			if err := validateProb(path+"."+f.name, f.v); err != nil {
				return err
			}
		}
		return nil
	}
	return newError(path+".model", l.Model, "is not a loss model", "use none, bernoulli or gilbert-elliott")
}

// Validate checks queue limits; see Resolved.Validate. Field names start with "queue".
func (q QueueLimit) Validate() error { return q.validate("queue") }

func (q QueueLimit) validate(path string) error {
	if q.Packets < 0 || q.Packets > MaxQueuePackets {
		return newError(path+".packets", strconv.FormatInt(q.Packets, 10), "is out of range", fmt.Sprintf("packets from 1 to %d, or 0 for no packet limit", int64(MaxQueuePackets)))
	}
	if q.Bytes != 0 && (q.Bytes < MinQueueBytes || q.Bytes > MaxQueueBytes) {
		return newError(path+".bytes", strconv.FormatInt(q.Bytes, 10), "is out of range", fmt.Sprintf("bytes from %d to %d, or 0 for no byte limit", MinQueueBytes, int64(MaxQueueBytes)))
	}
	return nil
}

// Infinite reports whether the queue has no limit at all (queue=infinite).
func (q QueueLimit) Infinite() bool { return q.Packets == 0 && q.Bytes == 0 }
