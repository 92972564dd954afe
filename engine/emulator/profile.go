package emulator

import (
	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
)

// ConfigFromProfile builds the emulator configuration of a resolved profile: both directions of
// the link model (traces loaded and checked, loss and jitter seeded from seed) and the TCP knobs on
// the routes — iw, irw and cc on the server's route towards the client, irw and cc on the client's,
// TCP+ (tcpplus=N: the topology multiplies the windows and sets wl_cubicp<N>), and TCP's ECN in
// the namespaces with ecn=1.
// Errors in the profile or its traces are *profile.Error (bad input).
func ConfigFromProfile(r profile.Resolved, origins int, seed uint64) (Config, error) {
	up, down, err := link.FromProfile(r, seed)
	if err != nil {
		return Config{}, err
	}
	return Config{
		Topology: netns.Config{
			Origins: origins,
			Server:  netns.RouteConfig{InitCwnd: r.IW, InitRwnd: r.IRW, CongCtl: r.CC},
			Client:  netns.RouteConfig{InitRwnd: r.IRW, CongCtl: r.CC},
			TCPPlus: r.TCPPlus,
			ECN:     r.ECN,
		},
		Up:   NewLinkPath(up),
		Down: NewLinkPath(down),
	}, nil
}
