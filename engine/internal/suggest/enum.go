package suggest

// The names an error lists beside its suggestion: a string enumeration — a named string type with a
// list of its members (client.Protocols, client.PriorityPolicies, page.ShardModes, browser.Protocols
// …) — read one way: which member a name spells (Member; Parse: or the error that lists the
// members), and the members as an "allowed:" message lists them (Join, JoinLast).

import (
	"fmt"
	"strings"
)

// Parse returns the member of list spelled s, or the error "s: allowed: a, b, c".
func Parse[T ~string](list []T, s string) (T, error) {
	if m, ok := Member(list, s); ok {
		return m, nil
	}
	return "", fmt.Errorf("%s: allowed: %s", s, Join(list))
}

// Member returns the member of list spelled s, and whether there is one.
func Member[T ~string](list []T, s string) (T, bool) {
	for _, m := range list {
		if string(m) == s {
			return m, true
		}
	}
	return "", false
}

// Join lists the members separated by ", " ("h1, h1s, h2"), as an "allowed:" message names them.
func Join[T ~string](list []T) string { return JoinLast(list, ", ") }

// JoinLast lists the members separated by ", " with last before the final one
// (JoinLast(modes, " or ") is "round-robin, tld or domain").
func JoinLast[T ~string](list []T, last string) string {
	var b strings.Builder
	for i, m := range list {
		switch {
		case i == 0:
		case i == len(list)-1:
			b.WriteString(last)
		default:
			b.WriteString(", ")
		}
		b.WriteString(string(m))
	}
	return b.String()
}
