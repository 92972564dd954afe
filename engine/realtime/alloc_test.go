package realtime_test

import (
	"encoding/binary"
	"os"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/tun"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/allocs"
	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/realtime"
)

// discardTUN takes every write and reads nothing: the runner's own work is all that is measured.
type discardTUN struct{ written int }

func (d *discardTUN) File() *os.File                         { return nil }
func (d *discardTUN) Read([][]byte, []int, int) (int, error) { return 0, nil }
func (d *discardTUN) Write(bufs [][]byte, _ int) (int, error) {
	d.written += len(bufs)
	return len(bufs), nil
}
func (d *discardTUN) MTU() (int, error)        { return 1500, nil }
func (d *discardTUN) Name() (string, error)    { return "discard", nil }
func (d *discardTUN) Events() <-chan tun.Event { return nil }
func (d *discardTUN) Close() error             { return nil }
func (d *discardTUN) BatchSize() int           { return 128 }

// tcpPacket is a 1500-byte IPv4 TCP segment, ECT(0), of one flow.
func tcpPacket() []byte {
	p := make([]byte, 1500)
	p[0], p[1] = 0x45, 0x02
	binary.BigEndian.PutUint16(p[2:], 1500)
	p[8], p[9] = 64, 6
	copy(p[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(p[20:], 443)
	binary.BigEndian.PutUint16(p[22:], 50000)
	p[32] = 5 << 4
	p[33] = 0x10
	return p
}

// pathStepper is one direction of a runner over the link a profile resolves to, driven in virtual
// time: a packet arrives every gap, and what is due is written out.
func pathStepper(t testing.TB, prof string) (step func(), out *discardTUN) {
	r, err := profile.Parse(prof)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := emulator.ConfigFromProfile(r, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	client, server := &discardTUN{}, &discardTUN{}
	run, err := realtime.New(realtime.Config{Client: client, Server: server, Up: cfg.Up, Down: cfg.Down})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Stepper(link.Down)
	pkt := tcpPacket()
	now := time.Duration(0)
	const gap = 100 * time.Microsecond // 120 Mbit/s offered to 100 Mbit/s: the queue decides on every packet
	return func() {
		now += gap
		s.Push(now, pkt)
		s.Release(now)
	}, client
}

// TestRunnerPathAllocs: the per-packet path of the real-time runner — a packet read, pushed
// into the link under a handle, taken back due (or dropped by the discipline), written out and
// its buffer recycled — allocates nothing in steady state, with every queue discipline, with and
// without ECN. (The link's own stages are held to it in engine/link; this is the runner's buffer
// pool and its registry, batches and the emulator's adapter around them.)
func TestRunnerPathAllocs(t *testing.T) {
	for _, name := range profile.DisciplineNames() {
		for _, ecn := range []string{"", ",ecn=1"} {
			prof := "rtt=10ms,bw=100mbit,queue=" + name + ecn
			step, out := pathStepper(t, prof)
			for range 100_000 { // 10 s of virtual time: the queue and the pool have grown
				step()
			}
			if out.written == 0 {
				t.Fatalf("%s: nothing released", prof)
			}
			if n := allocs.Count(20_000, step); n != 0 {
				t.Errorf("%s: %d allocations in 20,000 packets in steady state", prof, n)
			}
		}
	}
}

// BenchmarkRunnerPath: ns and allocations per packet through the runner and the link, in
// virtual time, with each queue discipline (go test -bench RunnerPath -benchmem ./realtime/).
func BenchmarkRunnerPath(b *testing.B) {
	for _, name := range profile.DisciplineNames() {
		b.Run(name, func(b *testing.B) {
			step, _ := pathStepper(b, "rtt=10ms,bw=100mbit,queue="+name)
			for range 100_000 {
				step()
			}
			b.ReportAllocs()
			for b.Loop() {
				step()
			}
		})
	}
}
