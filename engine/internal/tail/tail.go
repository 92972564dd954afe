// Package tail keeps the last lines of a process's output, for the one-line error that quotes
// them.
package tail

import (
	"strings"
	"sync"
)

// Lines keeps the last lines written or added (blank ones skipped). Safe for concurrent use.
type Lines struct {
	max   int
	none  string
	mu    sync.Mutex
	lines []string
}

// New keeps at most max lines; String says none when there are none.
func New(max int, none string) *Lines { return &Lines{max: max, none: none} }

// Add keeps one line.
func (t *Lines) Add(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[1:]
	}
}

// Write keeps each line of b (an io.Writer for a child's stderr).
func (t *Lines) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		t.Add(l)
	}
	return len(b), nil
}

// String joins the lines kept with " | ".
func (t *Lines) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return t.none
	}
	return strings.Join(t.lines, " | ")
}
