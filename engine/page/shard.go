package page

import (
	"fmt"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/suggest"
)

// ShardMode decides how Shard assigns objects to origins.
type ShardMode string

// Shard modes.
const (
	// ShardRoundRobin deals the objects after the root over the origins in turn (as study E
	// rewrote its pages).
	ShardRoundRobin ShardMode = "round-robin"
	// ShardTLD keeps all objects of one top-level-domain group (Object.Group) on one origin
	// (study W's sharding by top-level domain); groups are dealt over the origins in turn in order
	// of first appearance, the root's group first.
	ShardTLD ShardMode = "tld"
	// ShardDomain is ShardTLD by full domain (Object.Domain), W's sharding by full domain.
	ShardDomain ShardMode = "domain"
)

// ShardModes lists the modes.
var ShardModes = []ShardMode{ShardRoundRobin, ShardTLD, ShardDomain}

// ParseShardMode checks a mode name.
func ParseShardMode(s string) (ShardMode, error) {
	if m, ok := suggest.Member(ShardModes, s); ok {
		return m, nil
	}
	return "", fieldErr("shard_mode", s, "must be %s", suggest.JoinLast(ShardModes, " or "))
}

// Shard returns a copy of p served by n origins s1…sN.wirelab.test. The root HTML always stays on
// s1. With round-robin, object k (1-based, after the root) goes to origin ((k-1) mod n)+1. With
// tld/domain, objects of the same group/domain share an origin; n = 0 means one origin per group.
// Object paths, ids, sizes and the graph are unchanged; the HTML and CSS reference the new hosts.
func (p *Page) Shard(n int, mode ShardMode) (*Page, error) {
	c := p.Clone()
	others := len(p.Objects) - 1
	switch mode {
	case ShardRoundRobin:
		if n < 1 || n > MaxOrigins {
			return nil, fieldErr("shards", n, "must be 1–%d", MaxOrigins)
		}
		if n > 1 && n > others {
			return nil, fieldErr("shards", n, "the page has %d objects besides the root, so at most %d shards can each serve one", others, max(others, 1))
		}
		for k := 1; k < len(c.Objects); k++ {
			c.Objects[k].Origin = (k - 1) % n
		}
		c.Objects[0].Origin = 0
	case ShardTLD, ShardDomain:
		key, field, label := func(o Object) string { return o.Group }, "group", "top-level-domain groups"
		if mode == ShardDomain {
			key, field, label = func(o Object) string { return o.Domain }, "domain", "domains"
		}
		index := map[string]int{}
		var groups []string
		for i, o := range c.Objects {
			g := key(o)
			if g == "" {
				return nil, fieldErr(fmt.Sprintf("objects[%d].%s", i, field), nil, "missing; shard_mode %s needs a %s on every object", mode, field)
			}
			if _, ok := index[g]; !ok {
				index[g] = len(groups)
				groups = append(groups, g)
			}
		}
		if n == 0 {
			n = len(groups)
		}
		if n < 1 || n > MaxOrigins {
			return nil, fieldErr("shards", n, "must be 0 (one per %s) or 1–%d", field, MaxOrigins)
		}
		if n > len(groups) {
			return nil, fieldErr("shards", n, "shard_mode %s: the page has %d %s (%s), so at most %d shards", mode, len(groups), label, strings.Join(groups, ", "), len(groups))
		}
		for i := range c.Objects {
			c.Objects[i].Origin = index[key(c.Objects[i])] % n
		}
	default:
		return nil, fieldErr("shard_mode", string(mode), "must be %s", suggest.JoinLast(ShardModes, " or "))
	}
	c.Origins = make([]Origin, n)
	for i := range c.Origins {
		c.Origins[i] = Origin{Host: OriginHost(i)}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// ObjectsPerOrigin counts the objects each origin serves.
func (p *Page) ObjectsPerOrigin() []int {
	counts := make([]int, len(p.Origins))
	for _, o := range p.Objects {
		counts[o.Origin]++
	}
	return counts
}
