package trial

import (
	"fmt"
	"slices"

	"github.com/wirelab/wirelab/engine/browser"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

// notYet lists the contract's values this engine refuses because their implementation has not
// landed yet: the spec is bad input for this engine (exit 2), with a message naming the field and
// what the engine supports. Wiring one in is deleting its line here (and passing the value on to
// serve or fetch, see serveArgs and fetchArgs). Empty: this engine implements every value of
// contract 1 (spdy3, server.push and client.priority were the last, issue 7).
var notYet = []struct {
	field     string
	refused   func(*Spec) (value string, refused bool)
	supported string
}{}

// chromiumProtocols are the protocols a trial can load with client.impl = chromium: Chromium speaks
// no cleartext HTTP/2 and no SPDY any more.
var chromiumProtocols = []string{"h1", "h1s", "h2", "h3"}

// checkH3 refuses an h3 discovery the lab cannot give: https-rr needs the lab's DNS server (which
// serves the HTTPS records) and a lab of its own; a live page's origins announce what they do.
func checkH3(s *Spec) error {
	if s.Client.H3 == "https-rr" && s.Client.DNS != "server" {
		return fielderr.New("client.h3", s.Client.H3,
			"finds HTTP/3 in the lab DNS server's HTTPS records; with client.dns static it must be forced or alt-svc")
	}
	return nil
}

// checkSupported returns the first value of s this engine does not implement yet, or that the
// chosen loader cannot do. What the server under test cannot do is lab.Prepare's to refuse.
func checkSupported(s *Spec) error {
	for _, n := range notYet {
		if v, refused := n.refused(s); refused {
			return fielderr.New(n.field, v, "not supported by this engine yet; it supports %s", n.supported)
		}
	}
	if err := checkH3(s); err != nil {
		return err
	}
	if s.Client.Impl == "chromium" {
		for i, p := range s.Protocols {
			if !slices.Contains(chromiumProtocols, p) {
				return fielderr.New(fmt.Sprintf("protocols[%d]", i), p,
					"not loadable by client.impl chromium; Chromium loads h1, h1s, h2 and h3 (use client.impl engine for h2c and spdy3)")
			}
		}
		if s.Client.Mode != "flat" {
			return fielderr.New("client.mode", s.Client.Mode,
				"Chromium loads a page as a browser does; with client.impl chromium the mode must be flat")
		}
		if s.Client.Priority != "none" {
			return fielderr.New("client.priority", s.Client.Priority,
				"Chromium uses its own priorities; with client.impl chromium it must be none")
		}
		if s.Server.Push != "none" {
			return fielderr.New("server.push", s.Server.Push,
				"Chromium no longer accepts server push (it announces SETTINGS_ENABLE_PUSH 0); with client.impl chromium it must be none")
		}
		if _, err := browser.ParseViewport(s.Client.Viewport); err != nil {
			return fielderr.New("client.viewport", s.Client.Viewport, "must be WIDTHxHEIGHT[@DPR][,mobile] with sizes 1–10000 and a DPR above 0 up to 10")
		}
		return nil
	}
	// What only Chromium does (docs/vitals.md): the engine's loader records at full speed, with no
	// screen (its repeat view models the HTTP cache, resumed TLS and 0-RTT).
	if s.Client.CPUSlowdown != 1 {
		return fielderr.New("client.cpu_slowdown", fmt.Sprint(s.Client.CPUSlowdown),
			"slows Chromium's renderer; with client.impl engine it must be 1 (replay mode scales computation with client.compute_scale)")
	}
	return nil
}
