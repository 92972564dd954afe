// Package cli holds what every wirelab-engine subcommand shares: usage errors that exit 2, the
// contexts cancelled by signals (SignalContext; RunContext for a command that must clean up) and
// the root check.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unicode/utf8"
)

// UsageError is bad input: the message names the field, the value and what is allowed.
// Commands return it and main prints it as one line and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef builds a UsageError.
func Usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// IsUsage reports whether err is (or wraps) a UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// ExitError carries an exit status chosen by a command (e.g. the exit status of the command run by
// `shell`), printed by nobody.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// SignalContext is cancelled when the process receives SIGINT or SIGTERM. The returned function
// restores default signal handling.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// RunContext is the context of a command that creates what it must remove (a trial, a load test,
// a benchmark, a lab): cancelled on SIGINT, SIGTERM and SIGHUP, so that the command cleans up
// instead of dying, and SIGPIPE ignored — a control plane that died leaves stdout and stderr as
// broken pipes while this process cleans up, and writes must fail with EPIPE instead of killing it.
func RunContext() (context.Context, context.CancelFunc) {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}

// NeedRoot is nil when the process runs as root, and otherwise the error of a command that builds
// network namespaces and TUN devices.
func NeedRoot(command string) error {
	if os.Geteuid() == 0 {
		return nil
	}
	return errors.New(command + ": needs root (network namespaces and TUN devices)")
}

// Printable is s with every control character — C0 (ESC, which starts every terminal escape
// sequence, among them), DEL, C1 (the 8-bit CSI and OSC) — and the Unicode bidirectional
// overrides shown escaped (\x1b, \n, \u202e), so that text from input (a page's name, a path, a
// URL) cannot drive the terminal it is printed on. The twin of wirelab._terminal.controls_escaped.
func Printable(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i]) // a byte that is not UTF-8
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			fmt.Fprintf(&b, `\x%02x`, r)
		case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
