// Package realtime is the emulator's real-time runner: it moves IP packets between the client's
// and the server's TUN devices through the link model, releasing each at the deadline the model
// gives it, on the monotonic clock.
//
// Per direction (a pipe) there are two goroutines, each locked to its own OS thread, and the whole
// process is SCHED_RR while Run runs (Config.RealtimePriority; every thread at one priority, see
// internal/rt for why). The reader sleeps in ppoll(2) on the sending device's descriptor — kept out
// of the Go netpoller, so that a packet wakes this thread directly — takes the time, reads a batch
// (the device splits GSO super-packets into MTU-sized segments) and pushes each packet into its
// Link, which decides its fate and deadline. The writer sleeps on a futex until its spin window
// before the next deadline (the p99 of how late its sleeps end, at most SpinWindow), spins
// (yielding) the rest of the way, and writes everything due to the
// receiving device in one batch. A release that closely follows the previous one (a fast stream,
// a queue draining at 100 Mbit/s) is not spun for: the writer sleeps all the way to it. After a write it picks up (pickUp) what the receiving stack
// answered inside that write — a SYN-ACK, an ACK — from the other direction's device when that
// direction's reader is asleep, so an answer does not wait for a wake-up. No sleep lasts more than
// 5 ms per system call, and each goroutine passes through the Go scheduler every 5–8 ms, so the
// Go runtime never takes a sleeping thread's P (and its monitor thread stays at rest). Arrivals,
// drops and deliveries go to an optional Observer (the packet log and pcap); Stats holds the
// counters and the timer lateness (release − deadline) histogram.
//
// Devices are golang.zx2c4.com/wireguard/tun.Devices: the emulator's own (engine/tundev) in a run,
// tuntest.ChannelTUN in tests, which need no root. The runner knows the path's vocabulary (link.Fate,
// link.Dir) but not the model: a Link is three methods (engine/emulator adapts a *link.Direction),
// and the runner's packets travel through it as opaque Handles: the ids of their buffers (pool.go).
package realtime

import (
	"time"

	"golang.zx2c4.com/wireguard/tun"

	"github.com/wirelab/wirelab/engine/link"
)

// Dir is a direction of the path (link.Up: client → server, link.Down: server → client).
type Dir = link.Dir

// Handle is the runner's reference to a packet it pushed into a Link: the Link hands it back from
// Pop with the packet's fate, and never looks inside it.
type Handle uint64

// Link is one direction of the emulated path as the runner drives it (the sans-IO model in
// engine/link, through a small adapter). Time is the runner's clock: time since Run started.
// The runner serialises all calls on one Link.
type Link interface {
	// Push offers a packet (the whole IP packet) arriving at now from origin (0 = none), under
	// the runner's handle h. It returns link.Accepted — the bytes must then stay untouched until
	// Pop hands h back, except that the link may mark the packet's ECN field — or the drop that
	// refused the packet, and then the link has forgotten it.
	Push(now time.Duration, pkt []byte, origin int, h Handle) link.Fate
	// Pop returns the next packet the link is done with at now: one due at or before now, or one
	// the link dropped after accepting it.
	Pop(now time.Duration) (Out, bool)
	// NextDeadline is when Pop may next have a packet (it may then have none yet: ask again).
	NextDeadline() (time.Duration, bool)
}

// Out is a packet a Link is done with.
type Out struct {
	Handle Handle
	// Fate is link.Delivered or link.Marked (release it), or the drop the link decided after
	// accepting it (link.DroppedAQM, link.DroppedOverflow).
	Fate link.Fate
	// At is when the link releases a delivered packet — the deadline lateness is measured
	// against — or when it dropped one.
	At time.Duration
	// Sojourn is how long the packet waited in the link's queue before the rate stage took it.
	Sojourn time.Duration
}

// EventKind says what happened to a packet.
type EventKind int

const (
	Arrived   EventKind = iota // read from the sending TUN, before the link decides its fate
	Dropped                    // dropped by the link (Event.Fate says why)
	Delivered                  // being written to the receiving TUN
)

// Event is one packet event. Data is valid only during the Observe call.
type Event struct {
	Kind EventKind
	Dir  Dir
	// Fate: Arrived, link.Accepted; Dropped, the drop (link.DroppedLoss, DroppedQueue, DroppedAQM,
	// DroppedOverflow); Delivered, link.Delivered or link.Marked.
	Fate link.Fate
	In   time.Duration // when the packet was read from the sending TUN
	// Out: Delivered, when it was released to the receiving TUN; Dropped, when the link dropped it
	// (= In for a drop on arrival).
	Out time.Duration
	// Sojourn is how long it waited in the link's queue (Delivered, and drops after arrival).
	Sojourn time.Duration
	Data    []byte // the IP packet (one MTU-sized segment); a Delivered packet as released (ECN marked)
}

// Observer receives every packet event. Observe is called from the runner's goroutines (several
// at once) and must be quick and safe for concurrent use.
type Observer interface {
	Observe(ev *Event)
}

// Config configures a Runner.
type Config struct {
	Client, Server tun.Device // the TUN devices in the client and server namespaces
	Up, Down       Link       // client→server and server→client

	// OriginOf maps a server-side IPv4 address to its origin number (0 = none); the address is the
	// destination of Up packets and the source of Down packets. nil: every packet is origin 0.
	OriginOf func(addr [4]byte) int
	// Observer receives packet events; nil for none.
	Observer Observer
	// MTU bounds the packets read (segments after GSO splitting); default 1500, at most MaxMTU.
	MTU int
	// SpinWindow is the longest the writer spins before a deadline, and where its window starts;
	// the window then follows its sleeps' p99 lateness (plus 10 µs, at least 20 µs, at most
	// SpinWindow). Default DefaultSpinWindow. 0 < SpinWindow; negative disables spinning (sleep only).
	SpinWindow time.Duration
	// RealtimePriority is the SCHED_RR priority of the whole process while Run runs (1–99; 0 =
	// DefaultRealtimePriority; negative = normal scheduling); see internal/rt for why the whole
	// process. Without the privilege (CAP_SYS_NICE) the process silently keeps normal scheduling.
	RealtimePriority int
}

// DefaultRealtimePriority is one above the lowest real-time priority: enough to preempt ordinary
// processes when a packet is due (on a loaded machine an ordinary thread wakes milliseconds late)
// and the benchmark's real-time peers (bench.PeerPriority, 1), below any real-time task of the
// system. The kernel's RT throttling leaves others ≥ 5 % of each CPU, and the writers' spinning is
// bounded (spinShare).
const DefaultRealtimePriority = 2

// DefaultSpinWindow: futex sleeps with 1 ns timer slack end 5–40 µs late typically, with a tail of
// a few hundred µs when the CPU is idle (wake-up from deep idle); spinning the last 150 µs removes
// most of it at a CPU cost of at most 150 µs per release instant.
const DefaultSpinWindow = 150 * time.Microsecond

// offset is the headroom before each packet in its buffer (devices keep per-packet marks there;
// wireguard-go's own devices need 10 bytes for the virtio header). The runner's record of the
// packet (pool.go's meta, bytes 0–10) overlaps such a header (bytes 2–11) but never in time: the
// record is written after the device's Read is done with the headroom, and read (readMeta) before
// the packet is handed to the device's Write, which writes its header then; a stale byte left in a
// free buffer is overwritten at its next push. 12, not 16: a buffer starts on
// a cache line (the pool's buffers fall in Go's 1,792-byte size class, a multiple of 64), so an
// IPv4 packet's IP and TCP headers with timestamps (52 bytes) lie in the buffer's first line. At
// 16 the TCP options crossed into the second, and the writer's coalescing (tundev's sameFlow, on
// packets that waited out the link's delay and left the caches) missed on it once per segment:
// 4 % of the capacity run's CPU (docs/network.md, "The per-packet path, session 41").
const offset = 12

// MaxMTU bounds Config.MTU: a packet's length is kept in 16 bits (pool.go's meta), and a buffer
// holds MTU + 64 bytes after the headroom.
const MaxMTU = 1<<16 - 1 - 64

// batchSize is how many packets are read (segments of one super-packet) or written at once.
const batchSize = 128
