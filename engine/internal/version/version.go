// Package version reports the engine's version and the git commit it was built from.
package version

// Set at build time by the Makefile: -ldflags "-X .../version.Version=... -X .../version.GitSHA=...".
var (
	Version = "0.1.0-dev"
	GitSHA  = "unknown"
)

// String is the one-line version shown by `wirelab-engine version`.
func String() string { return Version + " (" + GitSHA + ")" }
