package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/wirelab/wirelab/engine/internal/nsthread"
	"golang.org/x/sys/unix"
)

// netnsRunDir is where named network namespaces are bind-mounted, as iproute2 does.
const netnsRunDir = nsthread.RunDir

// etcNetnsDir holds per-namespace files bind-mounted over /etc by `ip netns exec`.
const etcNetnsDir = "/etc/netns"

// ensureRunDir makes /run/netns exist and be a shared mount point, as `ip netns add` does, so
// that namespace mounts propagate to (and unmounts from) other mount namespaces.
func ensureRunDir() error {
	if err := os.MkdirAll(netnsRunDir, 0o755); err != nil {
		return err
	}
	madeMount := false
	for {
		err := unix.Mount("", netnsRunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || madeMount {
			return fmt.Errorf("make %s a shared mount: %w", netnsRunDir, err)
		}
		if err := unix.Mount(netnsRunDir, netnsRunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount %s on itself: %w", netnsRunDir, err)
		}
		madeMount = true
	}
}

// createNamed creates a network namespace bind-mounted at /run/netns/<name> and returns an open
// handle to it. It fails if the name exists. On error nothing is left behind.
func createNamed(name string) (*os.File, error) {
	if err := ensureRunDir(); err != nil {
		return nil, err
	}
	path := filepath.Join(netnsRunDir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0)
	if err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", name, err)
	}
	f.Close()
	err = func() error {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			return err
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			return fmt.Errorf("unshare: %w", err)
		}
		mountErr := unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, "")
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			return errors.Join(mountErr, fmt.Errorf("restore network namespace (thread retired): %w", err))
		}
		runtime.UnlockOSThread()
		if mountErr != nil {
			return fmt.Errorf("bind-mount: %w", mountErr)
		}
		return nil
	}()
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("create namespace %s: %w", name, err)
	}
	h, err := os.Open(path)
	if err != nil {
		deleteNamed(name)
		return nil, fmt.Errorf("open namespace %s: %w", name, err)
	}
	return h, nil
}

// deleteNamed unmounts and removes /run/netns/<name>. The namespace itself disappears when the
// last process and file handle in it are gone. A missing name is not an error.
func deleteNamed(name string) error {
	path := filepath.Join(netnsRunDir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount namespace %s: %w", name, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove namespace %s: %w", name, err)
	}
	return nil
}

// listNamed lists the names in /run/netns that wirelab could have created.
func listNamed() ([]string, error) {
	entries, err := os.ReadDir(netnsRunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if namespacePattern.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// nsID identifies a network namespace: device and inode of its nsfs file.
type nsID struct{ dev, ino uint64 }

func nsIDOf(path string) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nsID{}, err
	}
	return nsID{dev: st.Dev, ino: st.Ino}, nil
}

// nsInode is the inode of an open namespace handle (with the device, what nsIDOf reads by path).
func nsInode(f *os.File) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}
