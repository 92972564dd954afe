// Package floors is the engine's layering, in one table: every package sits on a floor, and a
// package imports only from its own floor or below (docs/architecture.md, "Floors"). Its test
// reads the module's import graph (`go list -json ./...`) and fails on an import from a higher
// floor and on a package the table does not place — as quic-go's linter rules keep its internal
// packages from importing the packages built on them.
package floors

// A Floor is a level of the engine; a higher floor is built on the lower ones.
type Floor int

// The floors, from the ground up.
const (
	// Ground: tools every floor may use, importing nothing of the engine above them (internal/…:
	// errors, files, units, cgroups, namespaces' threads, the children's command lines).
	Ground Floor = iota
	// Contract: what crosses a boundary, declared once — the schemas, the spec's shared fields,
	// the profile grammar, the file formats.
	Contract
	// Model: sans-IO models and protocols — the link, the page, the packet log, the real-time
	// runner, SPDY, DNS — and the TUN device.
	Model
	// Host: the machine — namespaces, routes, TCP+, the address policy, the emulated path, the
	// egress router's forwarder.
	Host
	// Endpoint: what speaks over the path — the loaders, the built-in server, the browser driver,
	// the probe, the load generator — and what reads their records (page import).
	Endpoint
	// UnderTest: what stands behind the path — the servers under test, the local internet.
	UnderTest
	// Lab: a lab's preparation and lifecycle.
	Lab
	// Run: a trial, a load test.
	Run
	// Tool: the benchmarks.
	Tool
	// Command: the wirelab-engine binary.
	Command
)

var names = [...]string{"ground", "contract", "model", "host", "endpoint", "under test", "lab", "run", "tool", "command"}

func (f Floor) String() string { return names[f] }

// Of places each package (its path below the module; "dir/..." places every package below dir
// that has no entry of its own).
var Of = map[string]Floor{
	"internal/...": Ground,

	"contract":              Contract,
	"contract/contracttest": Contract,
	"spec":                  Contract,
	"link/profile":          Contract,
	"har":                   Contract,
	"pcap":                  Contract,
	"labaddr":               Contract,

	"link":                  Model,
	"page":                  Model,
	"page/cachetest":        Model,
	"page/pagetest":         Model,
	"pktlog":                Model,
	"why":                   Model,
	"budget":                Model,
	"realtime":              Model,
	"realtime/realtimetest": Model,
	"tundev":                Model,
	"spdy":                  Model,
	"dns":                   Model,

	"tcpplus":     Host,
	"tcpplus/...": Host,
	"netns":       Host,
	"policy":      Host,
	"emulator":    Host,
	"egress":      Host,

	"client":            Endpoint,
	"server":            Endpoint,
	"server/servertest": Endpoint,
	"browser":           Endpoint,
	"probe":             Endpoint,
	"loadgen":           Endpoint,
	"tcpplus/backoff":   Endpoint,
	"pageimport":        Endpoint,

	"server/impl":     UnderTest,
	"sites":           UnderTest,
	"loadtest/status": UnderTest,

	"lab": Lab,

	"trial":    Run,
	"loadtest": Run,

	"bench": Tool,

	"cmd/wirelab-engine": Command,
}

// Place returns the floor of the package at path (below the module), and false when the table
// does not place it.
func Place(path string) (Floor, bool) {
	if f, ok := Of[path]; ok {
		return f, true
	}
	best, found := "", false
	var floor Floor
	for key, f := range Of {
		dir, ok := cutSuffix(key, "/...")
		if !ok || !(path == dir || hasPrefix(path, dir+"/")) || len(dir) <= len(best) {
			continue
		}
		best, floor, found = dir, f, true
	}
	return floor, found
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }
