package netns

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
)

// Prefix starts the name of every namespace wirelab creates; GC touches nothing else.
const Prefix = "wirelab-"

// Side is one end of the emulated path.
type Side int

const (
	// Client is the namespace where the page loader runs.
	Client Side = iota
	// Server is the namespace that holds the origins and the DNS server — or, in an egress
	// topology (Config.Egress), the router towards the far side (docs/egress.md).
	Server
	// Internet is the far side of an egress topology whose far side is the run's own local
	// internet (FarInternet): the origins and their DNS server, behind the router.
	Internet
)

// sides is every side a topology may have, in creation order.
var sides = [...]Side{Client, Server, Internet}

func (s Side) String() string {
	switch s {
	case Client:
		return "client"
	case Server:
		return "server"
	}
	return "internet"
}

// suffix is the last character of a side's namespace name.
func (s Side) suffix() string {
	switch s {
	case Client:
		return "c"
	case Server:
		return "s"
	}
	return "i"
}

// NamespaceName is the name of a run's namespace on one side: wirelab-<id>-c, wirelab-<id>-s or
// wirelab-<id>-i.
func NamespaceName(id string, s Side) string { return Prefix + id + "-" + s.suffix() }

// namespacePattern matches exactly the names NamespaceName produces.
var namespacePattern = regexp.MustCompile(`^wirelab-([0-9a-f]{8})-[csi]$`)

// idPattern matches a run id.
var idPattern = regexp.MustCompile(`^[0-9a-f]{8}$`)

// newID returns 8 random hex digits.
func newID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
