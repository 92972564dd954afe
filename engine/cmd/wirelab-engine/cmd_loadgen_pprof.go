package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
)

// checkPprofAddr refuses --pprof ADDR unless it is a loopback address and port.
func checkPprofAddr(addr string) error {
	if ap, err := netip.ParseAddrPort(addr); err != nil || !ap.Addr().IsLoopback() {
		return fmt.Errorf("want a loopback address and port, e.g. 127.0.0.1:6060")
	}
	return nil
}

// servePprof serves the Go runtime's profiles (net/http/pprof) on addr, a loopback address, for
// the life of the process: `go tool pprof http://ADDR/debug/pprof/heap` while the VUs hold is how
// the generator's memory per VU was taken apart (docs/loadtest.md, "Profiling the generator").
func servePprof(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() {
		err := http.Serve(ln, mux)
		fmt.Fprintf(os.Stderr, "wirelab-engine: loadgen --pprof %s: %v\n", addr, err)
	}()
	return nil
}
