// Package cli holds what every wirelab-engine subcommand shares: usage errors that exit 2 and a
// context that is cancelled on SIGINT/SIGTERM.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
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
