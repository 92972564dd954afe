package loadgen

import (
	"context"
	"errors"

	"github.com/wirelab/wirelab/engine/client"
)

// TabUsers makes the runner's users from one client.Loader: each VU is a lean client.Tab that
// loads root in flat mode, keeping its connections between pages (client.connections per_vu) or
// opening fresh ones for every page (per_iteration), counted by conns.
func TabUsers(l *client.Loader, root string, spec *Spec, conns *client.ConnGauge) func(i int) User {
	fresh := spec.Client.Connections == "per_iteration"
	return func(int) User {
		u := &tabUser{root: root}
		u.tab = l.NewTab(client.TabOptions{Fresh: fresh, Lean: true, Conns: conns, OnRequest: u.request})
		return u
	}
}

type tabUser struct {
	tab  *client.Tab
	root string
	s    *Sample // the load in progress
}

var _ User = (*tabUser)(nil)

func (u *tabUser) Load(ctx context.Context, s *Sample) {
	u.s = s
	res, err := u.tab.Load(ctx, u.root, nil)
	u.s = nil
	switch {
	case ctx.Err() != nil:
		s.Interrupted = true
	case err != nil: // the root was refused before anything was sent
		s.Fail(err, 0)
	case errors.Is(res.Err, client.ErrTimeout):
		s.Failed = true
		s.Errors[Timeout]++
	case res.Err != nil:
		s.Failed = true
	}
}

// request counts one completed request into the load's sample (OnRequest's calls of one load
// are serialised and end before Load returns).
func (u *tabUser) request(st client.RequestStats) {
	s := u.s
	if st.Status > 0 && !st.Aborted {
		if st.Exchange >= 0 {
			s.Exchanges = append(s.Exchanges, st.Exchange)
		} else {
			s.HitsUntimed++
		}
		s.Bytes += st.BodyBytes
	}
	if st.Aborted || (st.Err == nil && st.Status == 200) {
		return // the page's timeout counts once, as the page's error
	}
	s.Fail(st.Err, st.Status)
}

func (u *tabUser) Close() { u.tab.Close() }
