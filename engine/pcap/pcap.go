// Package pcap writes packet captures in the classic pcap format with nanosecond timestamps and
// the raw-IP link type (LINKTYPE_RAW = 101): each record is one IPv4 or IPv6 packet, no link header.
// Wireshark, tshark and tcpdump read these files.
package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/wirelab/wirelab/engine/internal/rtlock"
)

const (
	// MagicNanos is the pcap magic for nanosecond-resolution timestamps.
	MagicNanos = 0xa1b23c4d
	// LinkTypeRaw is LINKTYPE_RAW: the packet begins with an IPv4 or IPv6 header.
	LinkTypeRaw = 101
	// DefaultSnapLen keeps whole packets (the emulator's packets are at most one MTU).
	DefaultSnapLen = 65535

	fileHeaderLen   = 24
	recordHeaderLen = 16
)

// Writer appends packets to a pcap stream. It is safe for concurrent use.
type Writer struct {
	mu      rtlock.Mutex // the emulator's real-time threads write here
	w       *bufio.Writer
	snapLen int
	hdr     [recordHeaderLen]byte
	packets int64
}

// NewWriter writes the file header to w. snapLen caps the bytes kept per packet (0 =
// DefaultSnapLen); a capture of headers only needs 128.
func NewWriter(w io.Writer, snapLen int) (*Writer, error) {
	if snapLen == 0 {
		snapLen = DefaultSnapLen
	}
	if snapLen < 20 || snapLen > 262144 {
		return nil, fmt.Errorf("pcap: snaplen %d outside 20…262144", snapLen)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	var h [fileHeaderLen]byte
	binary.LittleEndian.PutUint32(h[0:], MagicNanos)
	binary.LittleEndian.PutUint16(h[4:], 2) // version 2.4
	binary.LittleEndian.PutUint16(h[6:], 4)
	// thiszone and sigfigs stay 0.
	binary.LittleEndian.PutUint32(h[16:], uint32(snapLen))
	binary.LittleEndian.PutUint32(h[20:], LinkTypeRaw)
	if _, err := bw.Write(h[:]); err != nil {
		return nil, err
	}
	return &Writer{w: bw, snapLen: snapLen}, nil
}

// WritePacket appends one packet captured at ts.
func (w *Writer) WritePacket(ts time.Time, pkt []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	incl := len(pkt)
	if incl > w.snapLen {
		incl = w.snapLen
	}
	ns := ts.UnixNano()
	binary.LittleEndian.PutUint32(w.hdr[0:], uint32(ns/1e9))
	binary.LittleEndian.PutUint32(w.hdr[4:], uint32(ns%1e9))
	binary.LittleEndian.PutUint32(w.hdr[8:], uint32(incl))
	binary.LittleEndian.PutUint32(w.hdr[12:], uint32(len(pkt)))
	if _, err := w.w.Write(w.hdr[:]); err != nil {
		return err
	}
	if _, err := w.w.Write(pkt[:incl]); err != nil {
		return err
	}
	w.packets++
	return nil
}

// Packets is the number of packets written.
func (w *Writer) Packets() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.packets
}

// Flush writes buffered records to the underlying writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Flush()
}

// Record is one packet read back from a capture.
type Record struct {
	Time    time.Time
	OrigLen int
	Data    []byte
}

// ReadAll parses a whole capture written by Writer (nanosecond magic, raw IP). It exists for
// tests and tools; it does not accept other pcap variants.
func ReadAll(r io.Reader) ([]Record, error) {
	var h [fileHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("pcap header: %w", err)
	}
	if binary.LittleEndian.Uint32(h[0:]) != MagicNanos {
		return nil, errors.New("pcap: not a little-endian nanosecond capture")
	}
	if lt := binary.LittleEndian.Uint32(h[20:]); lt != LinkTypeRaw {
		return nil, fmt.Errorf("pcap: link type %d, want %d", lt, LinkTypeRaw)
	}
	var out []Record
	for {
		var rh [recordHeaderLen]byte
		_, err := io.ReadFull(r, rh[:])
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("pcap record %d: %w", len(out), err)
		}
		incl := binary.LittleEndian.Uint32(rh[8:])
		data := make([]byte, incl)
		if _, err := io.ReadFull(r, data); err != nil {
			return out, fmt.Errorf("pcap record %d: %w", len(out), err)
		}
		ts := time.Unix(int64(binary.LittleEndian.Uint32(rh[0:])), int64(binary.LittleEndian.Uint32(rh[4:])))
		out = append(out, Record{Time: ts, OrigLen: int(binary.LittleEndian.Uint32(rh[12:])), Data: data})
	}
}
