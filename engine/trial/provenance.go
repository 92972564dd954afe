package trial

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/atomicfile"
	"github.com/wirelab/wirelab/engine/internal/version"
	"github.com/wirelab/wirelab/engine/lab"
)

// Provenance is trial.json's "provenance": what ran, where and when.
type Provenance struct {
	EngineVersion string   `json:"engine_version"`
	GitSHA        string   `json:"git_sha"`
	GoVersion     string   `json:"go_version"`
	Kernel        string   `json:"kernel"`
	CPU           string   `json:"cpu"`
	Hostname      string   `json:"hostname"`
	StartedAt     string   `json:"started_at"`
	EndedAt       string   `json:"ended_at"`
	Command       []string `json:"command"`
	// LoadAvgStart and LoadAvgEnd are /proc/loadavg's three averages when the trial started and
	// ended: other work on the machine competes with the client and servers under test.
	LoadAvgStart string `json:"loadavg_start"`
	LoadAvgEnd   string `json:"loadavg_end"`
	CPUs         int    `json:"cpus"`
	Namespaces   string `json:"namespaces"` // the run's namespace pair, wirelab-<id>-{c,s}
	// Server is the server under test as it ran.
	Server *ServerProvenance `json:"server,omitempty"`
}

// ServerProvenance is the server under test as it ran: its implementation and version, the
// values of the knobs it ran with (its own defaults resolved), and how its cost was measured.
type ServerProvenance struct {
	Impl       string         `json:"impl"`
	Version    string         `json:"version"`
	Effective  map[string]any `json:"effective"`
	CostSource string         `json:"cost_source"` // cgroup-v1 | cgroup-v2 | "" (not measured)
}

// CostSource describes how server cost is measured, for the log.
func CostSource(src string) string {
	if src == "" {
		return "nowhere (no usable cgroup hierarchy)"
	}
	return src
}

// NewProvenance describes this run: the engine, the machine, the command, the start.
func NewProvenance(command []string, started time.Time) Provenance {
	host, _ := os.Hostname()
	var u unix.Utsname
	_ = unix.Uname(&u)
	return Provenance{
		EngineVersion: version.Version, GitSHA: version.GitSHA, GoVersion: runtime.Version(),
		Kernel: unix.ByteSliceToString(u.Release[:]), CPU: cpuModel(), Hostname: host,
		StartedAt: rfc3339(started), Command: command, LoadAvgStart: loadAvg(), CPUs: runtime.NumCPU(),
	}
}

// Finish records the run's end: the time and the load average.
func (p *Provenance) Finish() {
	p.EndedAt = rfc3339(time.Now())
	p.LoadAvgEnd = loadAvg()
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// cpuModel is "N × model name" from /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	model, n := "", 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "processor":
			n++
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		}
	}
	if model == "" {
		model = runtime.GOARCH
	}
	return fmt.Sprintf("%d × %s", max(n, 1), model)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// EngineLog is a run's DIR/engine.log (a trial's, a load test's): a header with the command line
// and the settings, then one line per event, each stamped with the seconds since the run started.
// Safe for concurrent use (the server's output is copied in from another goroutine); a nil
// EngineLog discards.
type EngineLog struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

// NewEngineLog writes a run's log to w, its lines stamped from start.
func NewEngineLog(w io.Writer, start time.Time) *EngineLog { return &EngineLog{w: w, start: start} }

// Printf writes one event.
func (l *EngineLog) Printf(format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%10.6f %s\n", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...))
}

// Header writes the header's lines ("# …").
func (l *EngineLog) Header(lines ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range lines {
		fmt.Fprintf(l.w, "# %s\n", s)
	}
}

// StoppedLine is the log's line for a stopped path: what crossed it, what it dropped, how late
// its timers were.
func StoppedLine(sum emulator.Summary) string {
	return fmt.Sprintf("stopped: up %d packets / %d bytes, down %d packets / %d bytes, drops queue %d/%d loss %d/%d, device drops %d, lateness p50 %.1f µs p99 %.1f µs max %.1f µs",
		sum.Up.Packets, sum.Up.Bytes, sum.Down.Packets, sum.Down.Bytes, sum.Up.DropsQueue, sum.Down.DropsQueue,
		sum.Up.DropsLoss, sum.Down.DropsLoss, sum.DeviceDrops, sum.LatenessUS.P50, sum.LatenessUS.P99, sum.LatenessUS.Max)
}

// WriteEvent writes v as one JSON line to a run's progress stream (nil: none); write errors (a
// closed pipe) are ignored.
func WriteEvent(w io.Writer, v any) {
	if w == nil {
		return
	}
	b, _ := json.Marshal(v)
	_, _ = w.Write(append(b, '\n'))
}

// WriteJSON writes v as indented JSON to path, atomically (internal/atomicfile), with a result's
// mode 0644 (docs/results.md: results have fixed modes and hold no secrets): trial.json,
// loadtest.json.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}

// ServerProvenanceOf is the provenance of a page lab's server under test: its implementation,
// version, effective knobs and how its cost was measured.
func ServerProvenanceOf(l *lab.Lab) *ServerProvenance {
	return &ServerProvenance{Impl: l.Impl.Name(), Version: l.Version, Effective: l.Server.Launch.Effective, CostSource: l.CostSource}
}
