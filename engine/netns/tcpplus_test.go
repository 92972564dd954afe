package netns

import (
	"strings"
	"testing"
)

// TestTCPPlusConfig: TCP+ is validated before anything is created: N within 1…32, and only with
// cubic on the server's route (wl_cubicp<N> replaces it).
func TestTCPPlusConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{TCPPlus: 33}, "between 1 and 32"},
		{Config{TCPPlus: -1}, "between 1 and 32"},
		{Config{TCPPlus: 6, Server: RouteConfig{CongCtl: "bbr"}}, `congctl "bbr"`},
	} {
		if _, err := c.cfg.withDefaults(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	if got, err := (&Config{TCPPlus: 6}).withDefaults(); err != nil || got.Server.CongCtl != "cubic" {
		t.Errorf("TCPPlus 6 with the default congctl: %+v %v", got, err)
	}
}
