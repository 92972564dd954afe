// Package conformance runs the HTTP/2 conformance suite h2spec (github.com/summerwind/h2spec,
// v2.2.1, as a library: its generic, http2 and hpack groups, 145 cases without --strict) against
// one server, for the built-in server's tests and `wirelab-engine servers conformance`.
package conformance

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/summerwind/h2spec/config"
	"github.com/summerwind/h2spec/generic"
	h2spechpack "github.com/summerwind/h2spec/hpack"
	h2spechttp2 "github.com/summerwind/h2spec/http2"
	"github.com/summerwind/h2spec/spec"
)

// Result is one h2spec run.
type Result struct {
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Skipped  int      `json:"skipped"`
	Failures []string `json:"failures"` // "<group>/<n> <description>: <error>"
}

// stdoutMu serialises runs: h2spec reports on os.Stdout, which a run points at /dev/null.
var stdoutMu sync.Mutex

// H2Spec runs every h2spec group against host:port (TLS: without verifying the certificate),
// requesting path; a body larger than the initial flow-control window (64 KiB) keeps the stream
// open while the flow-control cases play out.
func H2Spec(host string, port int, tls bool, path string) (Result, error) {
	c := &config.Config{Host: host, Port: port, Path: path, Timeout: 2 * time.Second,
		MaxHeaderLen: 4000, TLS: tls, Insecure: true}
	stdoutMu.Lock()
	stdout := os.Stdout
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		stdoutMu.Unlock()
		return Result{}, err
	}
	os.Stdout = devnull
	groups := []*spec.TestGroup{generic.Spec(), h2spechttp2.Spec(), h2spechpack.Spec()}
	for _, g := range groups {
		g.Test(c)
	}
	os.Stdout = stdout
	devnull.Close()
	stdoutMu.Unlock()
	var r Result
	var walk func(g *spec.TestGroup)
	walk = func(g *spec.TestGroup) {
		for i, tc := range append(g.Tests, g.StrictTests...) {
			if tc.Result != nil && tc.Result.Failed {
				r.Failures = append(r.Failures, fmt.Sprintf("%s/%d %s: %v", g.ID(), i+1, tc.Desc, tc.Result.Error))
			}
		}
		for _, sub := range g.Groups {
			walk(sub)
		}
	}
	for _, g := range groups {
		r.Passed += g.PassedCount
		r.Failed += g.FailedCount
		r.Skipped += g.SkippedCount
		walk(g)
	}
	return r, nil
}
