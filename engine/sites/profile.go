package sites

import (
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// DefaultNet is the local internet's path unless told otherwise: a short round trip, so that a
// probe of the whole catalog takes seconds; each site's ExtraRTT is added to it.
const DefaultNet = "rtt=10ms"

// Profile is the local internet's resolved network profile: net with each served site's ExtraRTT
// as the origin_delay of its origin.
func Profile(net string) (profile.Resolved, error) {
	if net == "" {
		net = DefaultNet
	}
	r, err := profile.Parse(net)
	if err != nil {
		return r, err
	}
	if r.OriginExtraRTT == nil {
		r.OriginExtraRTT = map[int]time.Duration{}
	}
	for i, s := range Served(Catalog()) {
		if s.ExtraRTT > 0 {
			r.OriginExtraRTT[i+1] += s.ExtraRTT
		}
	}
	return r, r.Validate()
}
