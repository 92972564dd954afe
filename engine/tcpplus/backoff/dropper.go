package backoff

import (
	"errors"
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/wirelab/wirelab/engine/tcpplus/internal/nspath"
)

// Slots of the dropper's state map (see bpf/drop_once.c).
const (
	slotArmed uint32 = iota
	slotDropped
	slotDataSeen
	slotGSOSeen
	slotDropSeq
	slotCount
)

// dropper is wl_drop_once attached to the router's egress towards the receiver: armed from
// here, it drops exactly one data segment of the measured flow on the path.
type dropper struct {
	objs dropOnceObjects
	link link.Link
}

// DropStats is what the dropper saw during one flow.
type DropStats struct {
	Dropped  uint32 `json:"dropped_segments"` // 1 when the measurement worked
	DataSeen uint32 `json:"data_segments_seen"`
	GSOSeen  uint32 `json:"gso_aggregates_seen"` // packets of more than one segment (never dropped)
	DropSeq  uint32 `json:"dropped_seq"`         // TCP sequence number of the dropped segment
}

// attachDropper loads wl_drop_once for flows towards port and attaches it (tcx egress) to the
// router's interface towards the receiver.
func attachDropper(p *nspath.Path, port uint16) (*dropper, error) {
	spec, err := loadDropOnce()
	if err != nil {
		return nil, fmt.Errorf("backoff: %w", err)
	}
	if err := spec.Variables[dropOnceVarWlDport].Set(port); err != nil {
		return nil, fmt.Errorf("backoff: setting the dropper's port: %w", err)
	}
	d := &dropper{}
	if err := spec.LoadAndAssign(&d.objs, nil); err != nil {
		return nil, fmt.Errorf("backoff: loading the dropper: %w", err)
	}
	err = p.Do(p.Router, func() error {
		iface, err := net.InterfaceByName(nspath.RouterToReceiverIf)
		if err != nil {
			return err
		}
		d.link, err = link.AttachTCX(link.TCXOptions{
			Interface: iface.Index,
			Program:   d.objs.WlDropOnce,
			Attach:    ebpf.AttachTCXEgress,
		})
		return err
	})
	if err != nil {
		d.objs.Close()
		return nil, fmt.Errorf("backoff: attaching the dropper to the router (tcx, Linux ≥ 6.6): %w", err)
	}
	return d, nil
}

// Reset disarms the dropper and zeroes its counters, before a flow.
func (d *dropper) Reset() error {
	for k := range slotCount {
		if err := d.objs.WlDropState.Put(k, uint32(0)); err != nil {
			return fmt.Errorf("backoff: resetting the dropper: %w", err)
		}
	}
	return nil
}

// Arm makes the dropper drop the next data segment it sees.
func (d *dropper) Arm() error {
	if err := d.objs.WlDropState.Put(slotArmed, uint32(1)); err != nil {
		return fmt.Errorf("backoff: arming the dropper: %w", err)
	}
	return nil
}

// Stats reads the dropper's counters.
func (d *dropper) Stats() (DropStats, error) {
	var v [slotCount]uint32
	for k := range slotCount {
		if err := d.objs.WlDropState.Lookup(k, &v[k]); err != nil {
			return DropStats{}, fmt.Errorf("backoff: reading the dropper: %w", err)
		}
	}
	return DropStats{Dropped: v[slotDropped], DataSeen: v[slotDataSeen], GSOSeen: v[slotGSOSeen], DropSeq: v[slotDropSeq]}, nil
}

func (d *dropper) Close() error {
	var err error
	if d.link != nil {
		err = d.link.Close()
	}
	return errors.Join(err, d.objs.Close())
}
