package backoff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cilium/ebpf/link"

	"github.com/wirelab/wirelab/engine/tcpplus/internal/nspath"
)

// caReader reads, with the wl_ca_state iterator, what TCP_INFO does not report of the sender's
// socket: the cwnd at which the last reduction began and cubic's W_max.
type caReader struct {
	objs caStateObjects
	iter *link.Iter
}

func newCAReader(port uint16) (*caReader, error) {
	spec, err := loadCaState()
	if err != nil {
		return nil, fmt.Errorf("backoff: %w", err)
	}
	if err := spec.Variables[caStateVarWlDport].Set(port); err != nil {
		return nil, fmt.Errorf("backoff: setting the iterator's port: %w", err)
	}
	r := &caReader{}
	if err := spec.LoadAndAssign(&r.objs, nil); err != nil {
		return nil, fmt.Errorf("backoff: loading the TCP socket iterator: %w", err)
	}
	r.iter, err = link.AttachIter(link.IterOptions{Program: r.objs.WlCaState})
	if err != nil {
		r.objs.Close()
		return nil, fmt.Errorf("backoff: attaching the TCP socket iterator: %w", err)
	}
	return r, nil
}

// caRecord mirrors struct ca_record in bpf/ca_state.c.
type caRecord struct {
	LocalPort   uint32
	Cwnd        uint32
	Ssthresh    uint32
	PriorCwnd   uint32
	LastMaxCwnd uint32
}

// KernelState is what the iterator read from the sender's socket after a recovery.
type KernelState struct {
	Cwnd      uint32 `json:"cwnd"`
	Ssthresh  uint32 `json:"ssthresh"`
	PriorCwnd uint32 `json:"prior_cwnd"` // cwnd when the reduction began: what ssthresh() saw
	Wmax      uint32 `json:"wmax"`       // cubic's W_max (last_max_cwnd)
}

// read returns the state of the sender's socket with local port localPort. The iterator walks
// the sockets of the namespace it is opened in, so it is opened in the sender's.
func (r *caReader) read(p *nspath.Path, localPort uint16) (KernelState, error) {
	var raw []byte
	err := p.Do(p.Sender, func() error {
		rc, err := r.iter.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		raw, err = io.ReadAll(rc)
		return err
	})
	if err != nil {
		return KernelState{}, fmt.Errorf("backoff: reading the socket's congestion state: %w", err)
	}
	return findState(raw, localPort)
}

// findState picks the record of localPort out of the iterator's output.
func findState(raw []byte, localPort uint16) (KernelState, error) {
	const size = 20
	if len(raw)%size != 0 {
		return KernelState{}, fmt.Errorf("backoff: iterator output of %d bytes is not whole records", len(raw))
	}
	for off := 0; off < len(raw); off += size {
		var rec caRecord
		if _, err := binary.Decode(raw[off:off+size], binary.NativeEndian, &rec); err != nil {
			return KernelState{}, err
		}
		if rec.LocalPort == uint32(localPort) {
			return KernelState{Cwnd: rec.Cwnd, Ssthresh: rec.Ssthresh, PriorCwnd: rec.PriorCwnd, Wmax: rec.LastMaxCwnd}, nil
		}
	}
	return KernelState{}, errors.New("backoff: the sender's socket is not among the iterator's")
}

func (r *caReader) Close() error {
	return errors.Join(r.iter.Close(), r.objs.Close())
}
