// Package labaddr is the lab's address plan, the same in every run (each run's namespaces isolate
// it): the client's, the DNS server's and the origins' addresses, the lab's block and the name of
// the TUN device that carries it. The namespaces (netns) build it; the loaders, the address policy
// and the emulator read it — without depending on what builds it.
package labaddr

import (
	"fmt"
	"net/netip"
)

// TUNName is the name of the TUN device in each namespace.
const TUNName = "wltun0"

// The addresses.
var (
	// ClientAddr is the client's address (on its TUN device).
	ClientAddr = netip.AddrFrom4([4]byte{10, 77, 0, 2})
	// DNSAddr is where the run's DNS server listens, in the server namespace.
	DNSAddr = netip.AddrFrom4([4]byte{10, 77, 2, 53})
	// ClientPrefix is routed from the server namespace towards the client.
	ClientPrefix = netip.MustParsePrefix("10.77.0.0/24")
	// LabPrefix holds every address of a run; it is routed from the client towards the servers.
	LabPrefix = netip.MustParsePrefix("10.77.0.0/16")
)

// OriginPrefix holds every origin address (OriginAddr): 10.77.1.0/24.
var OriginPrefix = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 77, 1, 0}), 24)

// MaxOrigins is the number of origin addresses a topology can carry.
const MaxOrigins = 64

// OriginAddr is the address of origin n (1 ≤ n ≤ MaxOrigins): 10.77.1.n.
func OriginAddr(n int) netip.Addr {
	if n < 1 || n > MaxOrigins {
		panic(fmt.Sprintf("labaddr: origin %d outside 1…%d", n, MaxOrigins))
	}
	return netip.AddrFrom4([4]byte{10, 77, 1, byte(n)})
}

// OriginOf maps an IPv4 address (4 bytes, as found in a packet header) to its origin number:
// 10.77.1.n → n for 1 ≤ n ≤ MaxOrigins, anything else → 0 (no per-origin treatment).
func OriginOf(a [4]byte) int {
	if a[0] == 10 && a[1] == 77 && a[2] == 1 && a[3] >= 1 && a[3] <= MaxOrigins {
		return int(a[3])
	}
	return 0
}
