package probe

// Planned is a target after planning as `wirelab-engine probe --plan` prints it (one JSON line per
// site): what the site resolved to and whether every address passed the policy. Nothing has been
// sent to the site. A live trial plans its page's site this way, in its client namespace, before
// its first load (docs/live.md).
type Planned struct {
	Site    string   `json:"site"`    // as given
	Host    string   `json:"host"`    // the URL's host
	Addrs   []string `json:"addrs"`   // every resolved address (A, then AAAA); the address itself for an IP site
	Addr    string   `json:"addr"`    // the address a probe or a load contacts ("" when none)
	Refused string   `json:"refused"` // the policy's reason ("" when every address passed)
	Error   string   `json:"error"`   // resolution failure
}

// Plan is the target's planned form.
func (t *Target) Plan() Planned {
	p := Planned{Site: t.Site.Input, Host: t.Site.Host, Refused: t.Refused, Error: t.Error, Addrs: []string{}}
	switch {
	case t.DNS != nil:
		p.Addrs = append(append(p.Addrs, t.DNS.A...), t.DNS.AAAA...)
	case t.Site.IsIP():
		p.Addrs = append(p.Addrs, t.Site.Addr.String())
	}
	if t.Addr.IsValid() {
		p.Addr = t.Addr.String()
	}
	return p
}
