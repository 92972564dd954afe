package lab

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/wirelab/wirelab/engine/egress"
	"github.com/wirelab/wirelab/engine/internal/child"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/sites"
)

// How long a local internet's `sites serve` may take to print its ready line, and to exit after
// SIGINT before it is killed.
const (
	sitesReadyTimeout = 60 * time.Second
	sitesStopGrace    = 10 * time.Second
)

// startInternet starts the local internet behind the egress router: `sites serve` in the
// internet namespace (the catalog's servers and their DNS server; its certificates in the private
// directory, 0700) and the router's DNS forwarder.
func (l *Lab) startInternet(ctx context.Context) error {
	l.Sites = sites.Catalog()
	if err := l.makePrivateDir(0o700); err != nil {
		return err
	}
	cmd := l.Topo.Command(netns.Internet, l.o.Engine, "sites", "serve", "--cert-dir", l.Dir)
	cmd.Env, cmd.Stderr = l.o.Env, l.o.Stderr
	var info sites.ServeReady
	var err error
	if l.sitesProc, err = child.Start(ctx, "sites serve", cmd, sitesReadyTimeout, &info, nil); err != nil {
		return err
	}
	l.CAFile, l.SPKIHash = info.CAFile, info.SPKI
	return l.startForwarder()
}

// startForwarder starts the egress router's DNS forwarder on the far side: it relays the far
// side's answers, admitting into the router's set the addresses the policy passes.
func (l *Lab) startForwarder() error {
	var err error
	l.forwarder, err = egress.Start(l.Topo, l.o.Engine, l.o.Env, l.o.OnEgress)
	return err
}

// stopLive stops a live lab's forwarder and `sites serve`.
func (l *Lab) stopLive() error {
	var errs []error
	if l.forwarder != nil {
		if _, err := l.forwarder.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if l.sitesProc != nil {
		if err := l.sitesProc.Stop(os.Interrupt, sitesStopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
