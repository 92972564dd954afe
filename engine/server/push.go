package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/page"
)

// PushKind names a server push policy.
type PushKind string

// The push policies (study W's, after mod_spdy's).
const (
	// PushNone pushes nothing (the default).
	PushNone PushKind = "none"
	// PushAll pushes every object of the root's origin.
	PushAll PushKind = "all"
	// PushEmbedding pushes the objects whose URL the root HTML embeds in the original page: those
	// whose parent is the root (mod_spdy's push of the resources an HTML page embeds). Objects a
	// stylesheet references (parent = the CSS) are not pushed.
	PushEmbedding PushKind = "embedding-level"
	// PushDependency pushes the objects within depth N of the root in the page's dependency graph
	// (page.Depths; study W's dependency-based policy, N = 1 in the study).
	PushDependency PushKind = "dependency-level"
)

// PushPolicy is what the server pushes when it serves a page's root document over a protocol with
// push (h2, h2c, spdy3). The zero value is PushNone.
type PushPolicy struct {
	Kind  PushKind
	Level int // PushDependency: the depth N ≥ 1
}

// MaxPushLevel bounds dependency-level:N (deeper than any graph wirelab builds or records).
const MaxPushLevel = 1000

// pushAllowed is the error message's list of policies.
const pushAllowed = "must be none, all, embedding-level or dependency-level:N (N ≥ 1)"

// ParsePushPolicy reads none, all, embedding-level or dependency-level:N.
func ParsePushPolicy(s string) (PushPolicy, error) {
	switch PushKind(s) {
	case "", PushNone:
		return PushPolicy{Kind: PushNone}, nil
	case PushAll, PushEmbedding:
		return PushPolicy{Kind: PushKind(s)}, nil
	}
	if rest, ok := strings.CutPrefix(s, string(PushDependency)+":"); ok {
		n, err := strconv.Atoi(rest)
		if err == nil && n >= 1 && n <= MaxPushLevel && strconv.Itoa(n) == rest {
			return PushPolicy{Kind: PushDependency, Level: n}, nil
		}
	}
	return PushPolicy{}, fielderr.New("push", s, pushAllowed)
}

// String is the policy as ParsePushPolicy reads it.
func (p PushPolicy) String() string {
	switch p.Kind {
	case "":
		return string(PushNone)
	case PushDependency:
		return fmt.Sprintf("%s:%d", PushDependency, p.Level)
	}
	return string(p.Kind)
}

// Enabled reports whether the policy pushes anything at all.
func (p PushPolicy) Enabled() bool { return p.Kind != "" && p.Kind != PushNone }

func (p PushPolicy) validate() error {
	_, err := ParsePushPolicy(p.String())
	if err == nil && p.Kind == PushDependency && (p.Level < 1 || p.Level > MaxPushLevel) {
		err = fielderr.New("push", p.String(), pushAllowed)
	}
	return err
}

// Objects returns the indexes of the objects the policy pushes with pg's root document, in page
// order: only objects of the root's origin (a push is for the connection's origin; the page's other
// origins are other hosts and connections).
func (p PushPolicy) Objects(pg *page.Page) []int {
	if !p.Enabled() {
		return nil
	}
	var depths []int
	if p.Kind == PushDependency {
		depths = pg.Depths()
	}
	root := pg.Objects[0]
	var out []int
	for i := 1; i < len(pg.Objects); i++ {
		o := pg.Objects[i]
		if o.Origin != root.Origin {
			continue
		}
		switch p.Kind {
		case PushEmbedding:
			if o.Parent != "" && o.Parent != root.ID {
				continue
			}
		case PushDependency:
			if depths[i] > p.Level {
				continue
			}
		}
		out = append(out, i)
	}
	return out
}

// pushObjects promises the policy's objects on the root's stream before the root's response is
// written (so that the client learns of each push before the HTML that references it). It stops at
// the first refusal (the client disabled push, or its stream limit is reached) and returns how many
// were promised.
func (s *Server) pushObjects(w http.ResponseWriter, token string) int {
	pusher, ok := w.(http.Pusher)
	if !ok || len(s.pushSet) == 0 {
		return 0
	}
	n := 0
	for _, i := range s.pushSet {
		target := "/L/" + token + s.page.Objects[i].Path
		if err := pusher.Push(target, nil); err != nil {
			break
		}
		n++
	}
	return n
}
