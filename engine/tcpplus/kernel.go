package tcpplus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/tcpplus/internal/nspath"
)

const (
	// StateDir holds the registrations' state files and lock (see registry.go).
	StateDir = "/run/wirelab/tcpplus"
	// bpffsRoot is where the BPF filesystem is (or is mounted by us); pins go under pinDir.
	bpffsRoot = "/sys/fs/bpf"
	pinDir    = bpffsRoot + "/wirelab/tcpplus"

	availableCCs = "/proc/sys/net/ipv4/tcp_available_congestion_control"
	vmlinuxBTF   = "/sys/kernel/btf/vmlinux"
)

// ErrUnsupported is wrapped by the errors that say what the kernel lacks.
var ErrUnsupported = errors.New("kernel lacks support")

// Register loads and registers the congestion control that backs off like n cubic connections
// and returns its name (Name(n)) for TCP_CONGESTION or a route's congctl. Calls for the same n —
// from this process or any other on the machine — share one registration; each must call its
// unregister once it has no more sockets to open with the name (calling it again is a no-op),
// and the last one out removes the registration. Sockets already using it keep working.
// Needs root (CAP_BPF and CAP_NET_ADMIN). When the kernel cannot do it, the error (wrapping
// ErrUnsupported) names what is missing in one line.
func Register(n int) (name string, unregister func() error, err error) {
	if err := CheckN(n); err != nil {
		return "", nil, err
	}
	if os.Geteuid() != 0 {
		return "", nil, errors.New("tcpplus: registering a congestion control needs root (CAP_BPF, CAP_NET_ADMIN, and /run/wirelab and /sys/fs/bpf to write to)")
	}
	if err := Supported(); err != nil {
		return "", nil, err
	}
	return defaultRegistry.register(n, BetaPlusScaled(cubicBetaOrDefault(), n))
}

// GC removes what crashed runs left behind: registrations none of whose users is alive, and
// namespaces of interrupted backoff measurements (see package backoff). It returns what it
// removed, one description per object. It needs root.
func GC() ([]string, error) {
	names, err := defaultRegistry.gc()
	var removed []string
	for _, name := range names {
		removed = append(removed, "congestion control "+name)
	}
	paths, pathErr := nspath.GC(StateDir)
	return append(removed, paths...), errors.Join(err, pathErr)
}

var defaultRegistry = &registry{
	dir:     StateDir,
	backend: bpfBackend{},
	alive:   processAlive,
	self:    thisProcess,
}

var (
	supportOnce sync.Once
	supportErr  error
)

// Supported reports whether this kernel can run wl_cubicp: BTF, BPF struct_ops for TCP
// congestion control, and cubic with BTF. The kfuncs through which wl_cubicp calls cubic are
// checked when it loads (Register), where a failure is reported the same way.
func Supported() error {
	supportOnce.Do(func() { supportErr = checkSupport() })
	return supportErr
}

func checkSupport() error {
	if _, err := os.Stat(vmlinuxBTF); err != nil {
		return fmt.Errorf("tcpplus: %w: no kernel BTF (%s; needs CONFIG_DEBUG_INFO_BTF)", ErrUnsupported, vmlinuxBTF)
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("tcpplus: %w: cannot read kernel BTF: %v", ErrUnsupported, err)
	}
	var st *btf.Struct
	if err := spec.TypeByName("bpf_struct_ops_tcp_congestion_ops", &st); err != nil {
		return fmt.Errorf("tcpplus: %w: no BPF struct_ops for TCP congestion control (bpf_struct_ops_tcp_congestion_ops not in kernel BTF; needs CONFIG_BPF_JIT, CONFIG_BPF_SYSCALL, Linux ≥ 5.6)", ErrUnsupported)
	}
	ccs, err := os.ReadFile(availableCCs)
	if err != nil {
		return fmt.Errorf("tcpplus: %w: cannot read %s: %v", ErrUnsupported, availableCCs, err)
	}
	if !slices.Contains(strings.Fields(string(ccs)), "cubic") {
		return fmt.Errorf("tcpplus: %w: cubic is not loaded (not in %s; modprobe tcp_cubic)", ErrUnsupported, availableCCs)
	}
	var fn *btf.Func
	if err := spec.TypeByName("cubictcp_recalc_ssthresh", &fn); err != nil {
		return fmt.Errorf("tcpplus: %w: cubic's functions are not in kernel BTF (cubictcp_recalc_ssthresh; needs tcp_cubic built in)", ErrUnsupported)
	}
	return nil
}

// bpfBackend registers wl_cubicp<n> as a BPF struct_ops link pinned under pinDir, so the
// registration outlives the process that made it and any process can remove it.
type bpfBackend struct{}

var _ backend = bpfBackend{}

func pinPath(name string) string { return filepath.Join(pinDir, name) }

func (bpfBackend) Attach(name string, betaScaled uint32) error {
	if err := ensureBPFFS(); err != nil {
		return err
	}
	// Kernels before 5.11 charge BPF objects to RLIMIT_MEMLOCK; later ones need nothing.
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("tcpplus: %w", err)
	}
	spec, err := loadCubicplus()
	if err != nil {
		return fmt.Errorf("tcpplus: %w", err)
	}
	if err := spec.Variables[cubicplusVarWlBetaPlus].Set(betaScaled); err != nil {
		return fmt.Errorf("tcpplus: setting β': %w", err)
	}
	ms := spec.Maps[cubicplusMapWlCubicp]
	if err := setStructOpsName(ms, name); err != nil {
		return err
	}
	ms.Name = name // the kernel object's name, as bpftool shows it
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return loadError(err)
	}
	defer coll.Close()
	l, err := link.AttachStructOps(link.StructOpsOptions{Map: coll.Maps[cubicplusMapWlCubicp]})
	if err != nil {
		return permissionHint(fmt.Errorf("tcpplus: registering %s: %w", name, err))
	}
	defer l.Close()
	if err := os.MkdirAll(pinDir, 0o700); err != nil {
		return fmt.Errorf("tcpplus: %w", err)
	}
	if err := l.Pin(pinPath(name)); err != nil {
		return fmt.Errorf("tcpplus: pinning %s: %w", name, err)
	}
	return nil
}

// setStructOpsName writes name into the "name" member of the struct_ops value.
func setStructOpsName(ms *ebpf.MapSpec, name string) error {
	if len(name) >= caNameMax {
		return fmt.Errorf("tcpplus: congestion control name %q longer than %d bytes", name, caNameMax-1)
	}
	st, ok := ms.Value.(*btf.Struct)
	if !ok || len(ms.Contents) != 1 {
		return fmt.Errorf("tcpplus: unexpected struct_ops map layout in the BPF object")
	}
	value, ok := ms.Contents[0].Value.([]byte)
	if !ok {
		return fmt.Errorf("tcpplus: unexpected struct_ops value in the BPF object")
	}
	for _, m := range st.Members {
		if m.Name != "name" {
			continue
		}
		off := int(m.Offset.Bytes())
		if off+caNameMax > len(value) {
			return fmt.Errorf("tcpplus: struct_ops name member out of bounds")
		}
		field := value[off : off+caNameMax]
		clear(field)
		copy(field, name)
		return nil
	}
	return fmt.Errorf("tcpplus: no name member in struct %s", st.Name)
}

// loadError explains a failed load of wl_cubicp in one line, naming what the kernel lacks when
// that is the cause.
func loadError(err error) error {
	var verr *ebpf.VerifierError
	msg := err.Error()
	if errors.As(err, &verr) {
		msg = verr.Error() // the verifier's last line, which says why
	}
	if strings.Contains(msg, "cubictcp_") || strings.Contains(msg, "kfunc") {
		return fmt.Errorf("tcpplus: %w: the kernel does not let BPF congestion controls call cubic (cubictcp_* kfuncs; needs Linux ≥ 6.0 with tcp_cubic built in or loaded): %v", ErrUnsupported, firstLine(msg))
	}
	if errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("tcpplus: %w: %v", ErrUnsupported, firstLine(msg))
	}
	return permissionHint(fmt.Errorf("tcpplus: loading wl_cubicp: %v", firstLine(msg)))
}

func permissionHint(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w (registering a congestion control needs root: CAP_BPF and CAP_NET_ADMIN)", err)
	}
	return err
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func (bpfBackend) Detach(name string) error {
	path := pinPath(name)
	l, err := link.LoadPinnedLink(path, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tcpplus: opening %s: %w", path, err)
	}
	defer l.Close()
	if err := l.Unpin(); err != nil {
		return fmt.Errorf("tcpplus: unpinning %s: %w", name, err)
	}
	// Detaching unregisters the congestion control now; without it (older kernels) the close
	// below, being the last reference, does. Either way the name is gone when Detach returns,
	// whereas dropping the pin alone would unregister it later, from a kernel work queue.
	if err := l.Detach(); err != nil && !errors.Is(err, link.ErrNotSupported) {
		return fmt.Errorf("tcpplus: detaching %s: %w", name, err)
	}
	return nil
}

func (bpfBackend) Attached(name string) (bool, error) {
	_, err := os.Stat(pinPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (bpfBackend) Registered(name string) (bool, error) {
	return Registered(name)
}

func (bpfBackend) List() ([]string, error) {
	entries, err := os.ReadDir(pinDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tcpplus: %w", err)
	}
	var names []string
	for _, e := range entries {
		if _, ok := ParseName(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Registered reports whether the kernel currently offers a congestion control of that name.
func Registered(name string) (bool, error) {
	raw, err := os.ReadFile(availableCCs)
	if err != nil {
		return false, fmt.Errorf("tcpplus: %w", err)
	}
	return slices.Contains(strings.Fields(string(raw)), name), nil
}

// ensureBPFFS mounts the BPF filesystem at /sys/fs/bpf unless it is there (systemd mounts it on
// most machines; minimal VMs and containers may not).
func ensureBPFFS() error {
	var st unix.Statfs_t
	if err := unix.Statfs(bpffsRoot, &st); err == nil && st.Type == unix.BPF_FS_MAGIC {
		return nil
	}
	if err := unix.Mount("bpf", bpffsRoot, "bpf", 0, "mode=0700"); err != nil {
		return permissionHint(fmt.Errorf("tcpplus: %w: cannot mount the BPF filesystem at %s: %w", ErrUnsupported, bpffsRoot, err))
	}
	return nil
}
