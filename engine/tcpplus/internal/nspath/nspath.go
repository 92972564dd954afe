// Package nspath builds the path of the TCP+ backoff measurement: three network namespaces,
// sender ⇄ router ⇄ receiver, joined by two veth pairs, the router forwarding and rate-limiting
// towards the receiver with a token bucket (TBF) so that the sender's window fills a queue on
// the path, not at its own interface. Namespaces are named Prefix+<id>+"-snd|-rtr|-rcv"; a state
// file records the owning process so that GC can remove what a crashed run left behind.
package nspath

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/nsthread"
	"github.com/wirelab/wirelab/engine/tcpplus/internal/owner"
)

// Prefix starts the name of every namespace this package creates.
const Prefix = "wirelab-tcpplus-"

const (
	netnsDir = nsthread.RunDir // where `ip netns` keeps named namespaces

	// Interface names inside the namespaces (each namespace has its own name space).
	SenderIf           = "snd0" // sender → router
	RouterFromSenderIf = "rtr0"
	RouterToReceiverIf = "rtr1" // the bottleneck: TBF and any tc program go here
	ReceiverIf         = "rcv0"

	// DefaultQueueBytes is the TBF queue: large, so that the queue never overflows in a
	// measurement and the only loss is the one the measurement injects.
	DefaultQueueBytes = 8 << 20
)

var (
	SenderAddr        = netip.MustParseAddr("10.79.1.1")
	routerSenderAddr  = netip.MustParseAddr("10.79.1.2")
	routerReceiveAddr = netip.MustParseAddr("10.79.2.2")
	ReceiverAddr      = netip.MustParseAddr("10.79.2.1")
)

// Config shapes the path.
type Config struct {
	// RateBitsPerSecond limits the router's egress towards the receiver (TBF). 0 = no limit.
	RateBitsPerSecond uint64
	// QueueBytes is the TBF queue limit; 0 = DefaultQueueBytes.
	QueueBytes int
	// StateDir holds the ownership files; "" = DefaultStateDir.
	StateDir string
}

// DefaultStateDir is where ownership files go by default (shared with package tcpplus).
const DefaultStateDir = "/run/wirelab/tcpplus"

// Path is a built path. Close removes it.
type Path struct {
	ID                       string
	Sender, Router, Receiver string // namespace names

	stateFile string
	closed    bool
}

// state is the ownership file of a path.
type state struct {
	Owner      owner.Process `json:"owner"`
	Namespaces []string      `json:"namespaces"`
}

// New builds a path. On error nothing is left behind.
func New(ctx context.Context, cfg Config) (*Path, error) {
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	var idb [4]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(idb[:])
	p := &Path{
		ID:        id,
		Sender:    Prefix + id + "-snd",
		Router:    Prefix + id + "-rtr",
		Receiver:  Prefix + id + "-rcv",
		stateFile: filepath.Join(cfg.StateDir, "path-"+id+".json"),
	}
	me, err := owner.Self()
	if err != nil {
		return nil, err
	}
	// The ownership file comes first, so that a crash at any later point leaves nothing GC
	// cannot attribute.
	raw, err := json.Marshal(state{Owner: me, Namespaces: p.namespaces()})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("nspath: %w", err)
	}
	if err := os.WriteFile(p.stateFile, raw, 0o644); err != nil {
		return nil, fmt.Errorf("nspath: %w", err)
	}
	if err := p.build(ctx, cfg); err != nil {
		return nil, errors.Join(err, p.Close())
	}
	return p, nil
}

func (p *Path) namespaces() []string { return []string{p.Sender, p.Router, p.Receiver} }

func (p *Path) build(ctx context.Context, cfg Config) error {
	pfx := func(a netip.Addr) string { return a.String() + "/24" }
	steps := [][]string{
		{"ip", "netns", "add", p.Sender},
		{"ip", "netns", "add", p.Router},
		{"ip", "netns", "add", p.Receiver},
		{"ip", "-n", p.Sender, "link", "add", SenderIf, "type", "veth", "peer", "name", RouterFromSenderIf, "netns", p.Router},
		{"ip", "-n", p.Router, "link", "add", RouterToReceiverIf, "type", "veth", "peer", "name", ReceiverIf, "netns", p.Receiver},
		// One MSS per packet: no TSO/GSO aggregates, so that "one packet" is "one segment"
		// everywhere on the path.
		{"ip", "-n", p.Sender, "link", "set", "dev", SenderIf, "gso_max_segs", "1"},
		{"ip", "-n", p.Sender, "addr", "add", pfx(SenderAddr), "dev", SenderIf},
		{"ip", "-n", p.Router, "addr", "add", pfx(routerSenderAddr), "dev", RouterFromSenderIf},
		{"ip", "-n", p.Router, "addr", "add", pfx(routerReceiveAddr), "dev", RouterToReceiverIf},
		{"ip", "-n", p.Receiver, "addr", "add", pfx(ReceiverAddr), "dev", ReceiverIf},
	}
	for _, ns := range p.namespaces() {
		steps = append(steps, []string{"ip", "-n", ns, "link", "set", "dev", "lo", "up"})
	}
	steps = append(steps,
		[]string{"ip", "-n", p.Sender, "link", "set", "dev", SenderIf, "up"},
		[]string{"ip", "-n", p.Router, "link", "set", "dev", RouterFromSenderIf, "up"},
		[]string{"ip", "-n", p.Router, "link", "set", "dev", RouterToReceiverIf, "up"},
		[]string{"ip", "-n", p.Receiver, "link", "set", "dev", ReceiverIf, "up"},
		[]string{"ip", "-n", p.Sender, "route", "add", "default", "via", routerSenderAddr.String()},
		[]string{"ip", "-n", p.Receiver, "route", "add", "default", "via", routerReceiveAddr.String()},
	)
	if cfg.RateBitsPerSecond > 0 {
		// burst: at least 10 full packets and the bytes of one 4 ms timer tick at the rate.
		burst := max(15000, cfg.RateBitsPerSecond/8/250)
		steps = append(steps, []string{"tc", "-n", p.Router, "qdisc", "replace", "dev", RouterToReceiverIf, "root", "tbf",
			"rate", strconv.FormatUint(cfg.RateBitsPerSecond, 10) + "bit",
			"burst", strconv.FormatUint(burst, 10), "limit", strconv.Itoa(cfg.QueueBytes)})
	}
	for _, argv := range steps {
		if err := run(ctx, argv); err != nil {
			return err
		}
	}
	if err := p.SetSysctl(p.Router, "ipv4/ip_forward", "1"); err != nil {
		return err
	}
	return p.inOrder()
}

// SetSysctl writes value to /proc/sys/net/<key> in namespace ns.
func (p *Path) SetSysctl(ns, key, value string) error {
	err := onNamed(ns, func(f *os.File) error { return nsthread.SetSysctl(f, key, value) })
	if err != nil {
		return fmt.Errorf("nspath: %s in %s: %w", key, ns, err)
	}
	return nil
}

// Sysctl reads /proc/sys/net/<key> in namespace ns.
func (p *Path) Sysctl(ns, key string) (v string, err error) {
	err = onNamed(ns, func(f *os.File) (err error) {
		v, err = nsthread.Sysctl(f, key)
		return err
	})
	return v, err
}

// receivers lists each namespace's veth ends: where a packet of the path is received.
func (p *Path) receivers() map[string][]string {
	return map[string][]string{
		p.Sender:   {SenderIf},
		p.Router:   {RouterFromSenderIf, RouterToReceiverIf},
		p.Receiver: {ReceiverIf},
	}
}

// RPSCPUs is the receive packet steering mask of every veth end of the path: one CPU.
//
// A veth delivers a packet into the backlog queue of the CPU that sent it. A sender whose
// segments leave from two CPUs — the writer's system call on one, the ACK-clocked softirq on
// the other — fills two queues, and when one CPU is busy (the measurement's own TCP_INFO
// sampler spins on one) its queue waits while the other's is delivered: segments arrive out of
// order (the sender's TCPTSReorder counter rises). The sender takes that for loss, retransmits, and then, when
// the original's ACK shows it was not lost, takes the reduction back. A link does not reorder,
// so the path must not: steered to one CPU, every packet joins one queue in the order it was
// sent.
const RPSCPUs = "1"

// inOrder steers every veth end's receive processing to RPSCPUs.
func (p *Path) inOrder() error {
	for ns, ifs := range p.receivers() {
		err := withSysfs(ns, func(sysfs string) error {
			for _, ifname := range ifs {
				file := filepath.Join(sysfs, "class/net", ifname, "queues/rx-0/rps_cpus")
				if err := os.WriteFile(file, []byte(RPSCPUs+"\n"), 0o644); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("nspath: receive steering in %s: %w", ns, err)
		}
	}
	return nil
}

// withSysfs calls fn with the root of a sysfs mounted in namespace ns: sysfs shows the network
// devices of the namespace that mounts it, so it is mounted in a private mount namespace on a
// thread that entered ns (the thread ends with fn; the mount goes with it).
func withSysfs(ns string, fn func(sysfs string) error) error {
	return Do(ns, func() error {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("unshare: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("making mounts private: %w", err)
		}
		if err := unix.Mount("sysfs", "/sys", "sysfs", 0, ""); err != nil {
			return fmt.Errorf("mounting sysfs: %w", err)
		}
		return fn("/sys")
	})
}

// Do runs fn on an OS thread that has entered namespace ns. Sockets that fn creates belong to
// ns and may be used from any goroutine afterwards; fn must not rely on other goroutines being
// in ns. The thread is discarded afterwards rather than switched back.
func (p *Path) Do(ns string, fn func() error) error { return Do(ns, fn) }

// Do is Path.Do for any named namespace.
func Do(ns string, fn func() error) error {
	return onNamed(ns, func(f *os.File) error { return nsthread.Once(f, fn) })
}

// onNamed calls fn with the open namespace named ns.
func onNamed(ns string, fn func(*os.File) error) error {
	f, err := nsthread.Open(ns)
	if err != nil {
		return fmt.Errorf("nspath: %w", err)
	}
	defer f.Close()
	return fn(f)
}

// Close removes the namespaces (and with them the veths, the TBF and any tc program) and the
// ownership file. It is idempotent and ignores cancellation: it always runs to the end.
func (p *Path) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	err := removeNamespaces(p.namespaces())
	if rmErr := os.Remove(p.stateFile); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		err = errors.Join(err, fmt.Errorf("nspath: %w", rmErr))
	}
	return err
}

func removeNamespaces(names []string) error {
	var errs []error
	for _, ns := range names {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := run(context.Background(), []string{"ip", "netns", "del", ns}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// run runs a command, returning its stderr in the error.
func run(ctx context.Context, argv []string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("nspath: %s: %s", strings.Join(argv, " "), msg)
	}
	return nil
}

// Existing lists the namespaces on the machine whose name has Prefix.
func Existing() ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nspath: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), Prefix) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// GC removes the paths whose owner is gone, and namespaces with Prefix that no ownership file
// accounts for; it returns the namespaces (and ownership files) it removed.
func GC(stateDir string) ([]string, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	names, err := Existing()
	if err != nil {
		return nil, err
	}
	owners := map[string]owner.Process{}
	files, err := filepath.Glob(filepath.Join(stateDir, "path-*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "path-"), ".json")
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var st state
		if json.Unmarshal(raw, &st) == nil {
			owners[id] = st.Owner
		}
	}
	dead := Leftovers(names, owners, owner.Alive)
	var removed []string
	var errs []error
	for _, id := range dead.IDs {
		if err := os.Remove(filepath.Join(stateDir, "path-"+id+".json")); err == nil {
			removed = append(removed, "state file of path "+id)
		}
	}
	for _, ns := range dead.Namespaces {
		if err := removeNamespaces([]string{ns}); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "namespace "+ns)
	}
	return removed, errors.Join(errs...)
}

// Dead is what GC removes.
type Dead struct {
	IDs        []string // paths whose owner is gone (their ownership files go)
	Namespaces []string // namespaces to delete
}

// Leftovers decides what GC removes, given the namespaces with Prefix, the owner recorded for
// each path id, and a liveness test: every path whose owner is gone, and every namespace
// whose id has no owner at all.
func Leftovers(namespaces []string, owners map[string]owner.Process, alive func(owner.Process) bool) Dead {
	var d Dead
	for id, o := range owners {
		if !alive(o) {
			d.IDs = append(d.IDs, id)
		}
	}
	sort.Strings(d.IDs)
	for _, ns := range namespaces {
		id, ok := pathID(ns)
		if !ok {
			continue
		}
		o, owned := owners[id]
		if !owned || !alive(o) {
			d.Namespaces = append(d.Namespaces, ns)
		}
	}
	sort.Strings(d.Namespaces)
	return d
}

// pathID extracts <id> from Prefix+<id>+"-role".
func pathID(ns string) (string, bool) {
	rest, ok := strings.CutPrefix(ns, Prefix)
	if !ok {
		return "", false
	}
	id, role, ok := strings.Cut(rest, "-")
	if !ok || id == "" || (role != "snd" && role != "rtr" && role != "rcv") {
		return "", false
	}
	return id, true
}
