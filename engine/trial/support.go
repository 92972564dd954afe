package trial

import (
	"slices"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

// notYet lists the contract's values this engine refuses because their implementation has not
// landed yet: the spec is bad input for this engine (exit 2), with a message naming the field and
// what the engine supports. Wiring one in is deleting its line here (and passing the value on to
// serve or fetch, see serveArgs and fetchArgs).
var notYet = []struct {
	field     string
	refused   func(*Spec) (value string, refused bool)
	supported string
}{
	{"protocols", func(s *Spec) (string, bool) { return "spdy3", slices.Contains(s.Protocols, "spdy3") }, "h1, h1s, h2, h2c and h3"},
	{"server.push", func(s *Spec) (string, bool) { return s.Server.Push, s.Server.Push != "none" }, "none"},
	{"client.priority", func(s *Spec) (string, bool) { return s.Client.Priority, s.Client.Priority != "none" }, "none"},
	{"client.mode", func(s *Spec) (string, bool) { return s.Client.Mode, s.Client.Mode == "replay" }, "flat and objects"},
	{"client.impl", func(s *Spec) (string, bool) { return s.Client.Impl, s.Client.Impl != "engine" }, "engine"},
}

// checkSupported returns the first value of s this engine does not implement yet.
func checkSupported(s *Spec) error {
	for _, n := range notYet {
		if v, refused := n.refused(s); refused {
			return fielderr.New(n.field, v, "not supported by this engine yet; it supports %s", n.supported)
		}
	}
	return nil
}
