package tcpplus

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/atomicfile"
	"github.com/wirelab/wirelab/engine/tcpplus/internal/owner"
)

// A congestion control is global to the kernel, so every run on the machine that asks for the
// same n shares one registration. The registry counts its users in a state file per name under
// one directory, guarded by an flock on a lock file there: a registration is made by its first
// user and removed by its last. Users are processes (pid and start time, so a reused pid is not
// taken for a live user) plus a token per Register call; users whose process is gone are
// dropped whenever the state is read, which is how GC and the next Register clean up after a
// crash.

// backend is what the registry needs from the kernel. The real one loads, pins and unpins the
// BPF congestion control (kernel_linux.go); tests use an in-memory double.
type backend interface {
	// Attach registers congestion control name with multiplicative decrease betaScaled/BetaScale
	// and keeps it registered after this process exits, until Detach.
	Attach(name string, betaScaled uint32) error
	// Detach removes a registration made by Attach; it is not an error if there is none.
	Detach(name string) error
	// Attached reports whether a registration made by Attach (by any process) exists.
	Attached(name string) (bool, error)
	// Registered reports whether the kernel has a congestion control of that name, whoever
	// registered it.
	Registered(name string) (bool, error)
	// List returns the names of the registrations made by Attach.
	List() ([]string, error)
}

// holder is one user of a registration: one Register call of one process.
type holder struct {
	owner.Process
	Token string `json:"token"`
}

// regState is the content of a registration's state file.
type regState struct {
	Name       string   `json:"name"`
	N          int      `json:"n"`
	BetaScaled uint32   `json:"beta_scaled"`
	Holders    []holder `json:"holders"`
}

type registry struct {
	dir     string // state files and the lock file
	backend backend
	alive   func(holder) bool
	self    func() (holder, error) // this process, with a fresh token

	mu sync.Mutex // serialises this process's goroutines; the flock serialises processes
}

const lockFile = ".lock"

// locked runs fn while holding the registry's lock.
func (r *registry) locked(fn func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return fmt.Errorf("tcpplus: state directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(r.dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("tcpplus: lock file: %w", err)
	}
	defer f.Close()
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("tcpplus: locking %s: %w", f.Name(), err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return fn()
}

func (r *registry) statePath(name string) string { return filepath.Join(r.dir, name+".json") }

// load reads a registration's state; a missing file is an empty state.
func (r *registry) load(name string) (regState, error) {
	st := regState{Name: name}
	raw, err := os.ReadFile(r.statePath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("tcpplus: reading state of %s: %w", name, err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("tcpplus: state file %s: %w", r.statePath(name), err)
	}
	st.Name = name
	return st, nil
}

// save writes a registration's state atomically, or removes the file when nobody holds it.
func (r *registry) save(st regState) error {
	path := r.statePath(st.Name)
	if len(st.Holders) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("tcpplus: removing state of %s: %w", st.Name, err)
		}
		return nil
	}
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("tcpplus: writing state of %s: %w", st.Name, err)
	}
	return nil
}

// prune drops the holders whose process is gone.
func (r *registry) prune(st *regState) {
	st.Holders = slices.DeleteFunc(st.Holders, func(h holder) bool { return !r.alive(h) })
}

// register adds a user to the registration for n, making the registration if it is the first.
func (r *registry) register(n int, betaScaled uint32) (string, func() error, error) {
	name := Name(n)
	me, err := r.self()
	if err != nil {
		return "", nil, err
	}
	err = r.locked(func() error {
		st, err := r.load(name)
		if err != nil {
			return err
		}
		r.prune(&st)
		attached, err := r.backend.Attached(name)
		if err != nil {
			return err
		}
		if !attached {
			taken, err := r.backend.Registered(name)
			if err != nil {
				return err
			}
			if taken {
				return fmt.Errorf("tcpplus: a congestion control named %s is registered, but not by wirelab; remove it or pick another n", name)
			}
			if err := r.backend.Attach(name, betaScaled); err != nil {
				return err
			}
			st.N, st.BetaScaled = n, betaScaled
		}
		st.Holders = append(st.Holders, me)
		if err := r.save(st); err != nil {
			if !attached {
				_ = r.backend.Detach(name)
			}
			return err
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	var once sync.Once
	var unregErr error
	unregister := func() error {
		once.Do(func() { unregErr = r.release(name, me.Token) })
		return unregErr
	}
	return name, unregister, nil
}

// release removes one user; the last one out removes the registration.
func (r *registry) release(name, token string) error {
	return r.locked(func() error {
		st, err := r.load(name)
		if err != nil {
			return err
		}
		st.Holders = slices.DeleteFunc(st.Holders, func(h holder) bool { return h.Token == token })
		r.prune(&st)
		if len(st.Holders) == 0 {
			if err := r.backend.Detach(name); err != nil {
				return err
			}
		}
		return r.save(st)
	})
}

// gc removes every registration whose users are all gone, including registrations without a
// state file (a crash between attaching and recording the user), and returns their names.
func (r *registry) gc() ([]string, error) {
	var removed []string
	err := r.locked(func() error {
		names, err := r.backend.List()
		if err != nil {
			return err
		}
		entries, err := os.ReadDir(r.dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("tcpplus: state directory: %w", err)
		}
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
				if _, isOurs := ParseName(n); isOurs {
					names = append(names, n)
				}
			}
		}
		sort.Strings(names)
		names = slices.Compact(names)
		var errs []error
		for _, name := range names {
			st, err := r.load(name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			r.prune(&st)
			if len(st.Holders) == 0 {
				attached, err := r.backend.Attached(name)
				if err == nil && attached {
					err = r.backend.Detach(name)
					if err == nil {
						removed = append(removed, name)
					}
				}
				if err != nil {
					errs = append(errs, err)
					continue
				}
			}
			if err := r.save(st); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
	return removed, err
}

// thisProcess identifies the calling process, with a fresh token.
func thisProcess() (holder, error) {
	p, err := owner.Self()
	if err != nil {
		return holder{}, fmt.Errorf("tcpplus: %w", err)
	}
	var tok [8]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return holder{}, err
	}
	return holder{Process: p, Token: hex.EncodeToString(tok[:])}, nil
}

// processAlive reports whether the holder's process still runs.
func processAlive(h holder) bool { return owner.Alive(h.Process) }
