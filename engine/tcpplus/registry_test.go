package tcpplus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/wirelab/wirelab/engine/tcpplus/internal/owner"
)

// fakeKernel is the in-memory double of the BPF backend. It is shared by the registries of
// several simulated processes, fails on an Attach of something attached (a double
// registration the kernel would refuse) and counts calls.
type fakeKernel struct {
	mu       sync.Mutex
	attached map[string]uint32 // name → β'
	foreign  map[string]bool   // registered by someone else
	attaches int
	detaches int
	failNext error
}

func newFakeKernel() *fakeKernel {
	return &fakeKernel{attached: map[string]uint32{}, foreign: map[string]bool{}}
}

func (k *fakeKernel) Attach(name string, beta uint32) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.failNext; err != nil {
		k.failNext = nil
		return err
	}
	if _, dup := k.attached[name]; dup {
		return fmt.Errorf("%s already registered", name)
	}
	k.attached[name] = beta
	k.attaches++
	return nil
}

func (k *fakeKernel) Detach(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.attached[name]; ok {
		delete(k.attached, name)
		k.detaches++
	}
	return nil
}

func (k *fakeKernel) Attached(name string) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.attached[name]
	return ok, nil
}

func (k *fakeKernel) Registered(name string) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.attached[name]
	return ok || k.foreign[name], nil
}

func (k *fakeKernel) List() ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var names []string
	for n := range k.attached {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (k *fakeKernel) isAttached(name string) bool { ok, _ := k.Attached(name); return ok }

// fakeProcesses stands for the processes of the machine: pids and whether they run.
type fakeProcesses struct {
	mu   sync.Mutex
	dead map[int]bool
	seq  int
}

func (p *fakeProcesses) alive(h holder) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.dead[h.PID]
}

func (p *fakeProcesses) kill(pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dead[pid] = true
}

// process returns a registry as process pid would have it: its own mutex, the shared
// directory (and so the shared flock) and kernel.
func (p *fakeProcesses) process(dir string, k *fakeKernel, pid int) *registry {
	return &registry{
		dir:     dir,
		backend: k,
		alive:   p.alive,
		self: func() (holder, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.seq++
			return holder{Process: owner.Process{PID: pid, Start: 1}, Token: fmt.Sprintf("tok%d", p.seq)}, nil
		},
	}
}

func newWorld(t *testing.T) (string, *fakeKernel, *fakeProcesses) {
	return t.TempDir(), newFakeKernel(), &fakeProcesses{dead: map[int]bool{}}
}

func holdersOf(t *testing.T, r *registry, name string) int {
	t.Helper()
	st, err := r.load(name)
	if err != nil {
		t.Fatal(err)
	}
	return len(st.Holders)
}

func TestRegistryRefcount(t *testing.T) {
	dir, k, procs := newWorld(t)
	a := procs.process(dir, k, 100)
	b := procs.process(dir, k, 200)

	name, unA, err := a.register(6, 973)
	if err != nil || name != "wl_cubicp6" {
		t.Fatalf("register: %q, %v", name, err)
	}
	_, unA2, err := a.register(6, 973) // same process again
	if err != nil {
		t.Fatal(err)
	}
	_, unB, err := b.register(6, 973) // another process
	if err != nil {
		t.Fatal(err)
	}
	if k.attaches != 1 || holdersOf(t, a, name) != 3 {
		t.Fatalf("attaches %d, holders %d; want 1, 3", k.attaches, holdersOf(t, a, name))
	}
	if k.attached[name] != 973 {
		t.Errorf("attached with β' %d", k.attached[name])
	}

	for i, un := range []func() error{unA, unA, unB} { // unA twice: the second is a no-op
		if err := un(); err != nil {
			t.Fatal(err)
		}
		if !k.isAttached(name) {
			t.Fatalf("detached after %d unregister calls while a user remains", i+1)
		}
	}
	if err := unA2(); err != nil {
		t.Fatal(err)
	}
	if k.isAttached(name) || k.detaches != 1 {
		t.Fatalf("after the last unregister: attached %v, detaches %d", k.isAttached(name), k.detaches)
	}
	if _, err := os.Stat(a.statePath(name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file left behind: %v", err)
	}
}

func TestRegistryDifferentNAreIndependent(t *testing.T) {
	dir, k, procs := newWorld(t)
	r := procs.process(dir, k, 100)
	_, un6, err := r.register(6, 973)
	if err != nil {
		t.Fatal(err)
	}
	_, un2, err := r.register(2, 870)
	if err != nil {
		t.Fatal(err)
	}
	if err := un6(); err != nil {
		t.Fatal(err)
	}
	if k.isAttached("wl_cubicp6") || !k.isAttached("wl_cubicp2") {
		t.Fatalf("attached: %v", k.attached)
	}
	if err := un2(); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryRefusesForeignName(t *testing.T) {
	dir, k, procs := newWorld(t)
	k.foreign["wl_cubicp6"] = true
	_, _, err := procs.process(dir, k, 100).register(6, 973)
	if err == nil || !strings.Contains(err.Error(), "not by wirelab") {
		t.Fatalf("err = %v", err)
	}
	if k.attaches != 0 {
		t.Error("attached over a foreign registration")
	}
}

func TestRegistryAttachFailureLeavesNothing(t *testing.T) {
	dir, k, procs := newWorld(t)
	r := procs.process(dir, k, 100)
	k.failNext = errors.New("verifier says no")
	if _, _, err := r.register(6, 973); err == nil || !strings.Contains(err.Error(), "verifier says no") {
		t.Fatalf("err = %v", err)
	}
	if holdersOf(t, r, "wl_cubicp6") != 0 {
		t.Error("a failed registration was counted")
	}
	// The next attempt works.
	_, un, err := r.register(6, 973)
	if err != nil {
		t.Fatal(err)
	}
	if err := un(); err != nil {
		t.Fatal(err)
	}
}

// A crashed user does not keep the registration forever: the next user's unregister (which
// prunes dead users) or GC removes it.
func TestRegistryDeadUsersArePruned(t *testing.T) {
	dir, k, procs := newWorld(t)
	crashed := procs.process(dir, k, 100)
	live := procs.process(dir, k, 200)
	if _, _, err := crashed.register(6, 973); err != nil {
		t.Fatal(err)
	}
	procs.kill(100)
	_, un, err := live.register(6, 973)
	if err != nil {
		t.Fatal(err)
	}
	if k.attaches != 1 || holdersOf(t, live, "wl_cubicp6") != 1 {
		t.Fatalf("attaches %d, holders %d; want the crashed user pruned and the registration reused", k.attaches, holdersOf(t, live, "wl_cubicp6"))
	}
	if err := un(); err != nil {
		t.Fatal(err)
	}
	if k.isAttached("wl_cubicp6") {
		t.Error("registration kept after its last live user left")
	}
}

func TestRegistryGC(t *testing.T) {
	dir, k, procs := newWorld(t)
	crashed := procs.process(dir, k, 100)
	live := procs.process(dir, k, 200)
	if _, _, err := crashed.register(6, 973); err != nil {
		t.Fatal(err)
	}
	_, unLive, err := live.register(3, 922)
	if err != nil {
		t.Fatal(err)
	}
	// A registration without a state file: a crash between attaching and recording the user.
	if err := k.Attach("wl_cubicp9", 990); err != nil {
		t.Fatal(err)
	}
	procs.kill(100)

	gc := procs.process(dir, k, 300)
	removed, err := gc.gc()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(removed, ",") != "wl_cubicp6,wl_cubicp9" {
		t.Errorf("removed %v, want wl_cubicp6 and wl_cubicp9", removed)
	}
	if !k.isAttached("wl_cubicp3") {
		t.Error("GC removed a registration whose user is alive")
	}
	if removed, err := gc.gc(); err != nil || len(removed) != 0 {
		t.Errorf("second GC: %v, %v; want nothing", removed, err)
	}
	if err := unLive(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != lockFile {
			t.Errorf("left in the state directory: %s", e.Name())
		}
	}
}

// Many users in several processes registering and unregistering at once: exactly one
// registration while anyone holds it, none at the end, never a double Attach.
func TestRegistryConcurrent(t *testing.T) {
	dir, k, procs := newWorld(t)
	const processes, perProcess, rounds = 4, 4, 20
	var wg sync.WaitGroup
	errs := make(chan error, processes*perProcess*rounds)
	for p := range processes {
		r := procs.process(dir, k, 100+p)
		for range perProcess {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					_, un, err := r.register(6, 973)
					if err != nil {
						errs <- err
						return
					}
					if !k.isAttached("wl_cubicp6") {
						errs <- errors.New("not attached while held")
					}
					if err := un(); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if k.isAttached("wl_cubicp6") {
		t.Error("still attached after every user left")
	}
	if k.attaches != k.detaches || k.attaches == 0 {
		t.Errorf("attaches %d, detaches %d", k.attaches, k.detaches)
	}
}

func TestRegistryCorruptStateIsAnError(t *testing.T) {
	dir, k, procs := newWorld(t)
	if err := os.WriteFile(filepath.Join(dir, "wl_cubicp6.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := procs.process(dir, k, 100).register(6, 973)
	if err == nil || !strings.Contains(err.Error(), "wl_cubicp6.json") {
		t.Fatalf("err = %v; want one naming the state file", err)
	}
}
