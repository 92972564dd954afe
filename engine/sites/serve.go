package sites

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/wirelab/wirelab/engine/dns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// PageName is the page every site's server serves (its root document is at Path): a root document
// and eight 4 kB objects, each site's naming the site itself (a live load discovers them).
const PageName = "synthetic:8x4kB,html=4kB"

// ServeConfig places the catalog's sites on addresses and ports.
type ServeConfig struct {
	Sites []Site
	// Addrs are the addresses of Served(Sites), in order (labaddr.OriginAddr(1…) in a run).
	Addrs []netip.Addr
	// Ports of every site (default 80, 443, 443). Tests on loopback pick free ones.
	PortHTTP, PortHTTPS, PortQUIC int
	// DNS is where the sites' DNS server listens (host:port); "" none.
	DNS string
	// CertDir is where the shared certificates go ("" a new temporary directory).
	CertDir string
}

// Running is the served local internet.
type Running struct {
	Certs   *server.Certs
	DNS     *dns.Server
	servers []*server.Server
	resets  []*resetter
}

// Serve starts every site's server (and TLS resetter) and the DNS server; on error nothing is
// left running.
func Serve(cfg ServeConfig) (*Running, error) {
	served := Served(cfg.Sites)
	if len(cfg.Addrs) != len(served) {
		return nil, fmt.Errorf("sites: %d addresses for %d served sites", len(cfg.Addrs), len(served))
	}
	if cfg.PortHTTP == 0 && cfg.PortHTTPS == 0 && cfg.PortQUIC == 0 {
		cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC = 80, 443, 443
	}
	pg, err := page.Load(PageName, 1)
	if err != nil {
		return nil, err
	}
	r := &Running{}
	if r.Certs, err = server.NewCerts(cfg.CertDir, cfg.Addrs); err != nil {
		return nil, err
	}
	records := dns.Records{Addrs: map[string]netip.Addr{}, HTTPS: map[string][]dns.HTTPSRecord{}}
	i := 0
	for _, s := range cfg.Sites {
		if len(s.HTTPS) > 0 {
			records.HTTPS[s.Name] = s.HTTPS
		}
		if s.Addr.IsValid() {
			records.Addrs[s.Name] = s.Addr
			continue
		}
		addr := cfg.Addrs[i]
		i++
		records.Addrs[s.Name] = addr
		if err := r.start(pg, s, addr, cfg); err != nil {
			return nil, errors.Join(fmt.Errorf("sites: %s: %w", s.Name, err), r.Close())
		}
	}
	if cfg.DNS != "" {
		if r.DNS, err = dns.ListenRecords(cfg.DNS, records); err != nil {
			return nil, errors.Join(err, r.Close())
		}
	}
	return r, nil
}

func (r *Running) start(pg *page.Page, s Site, addr netip.Addr, cfg ServeConfig) error {
	if len(s.Protocols) > 0 {
		sc := server.DefaultConfig(addr)
		sc.Protocols = s.Protocols
		sc.PortHTTP, sc.PortHTTPS, sc.PortQUIC = cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC
		// Every site serves the run's one CA (a copy that leaves the files to Running).
		certs, err := server.LoadCerts(r.Certs.Dir)
		if err != nil {
			return err
		}
		sc.AltSvc, sc.H2CUpgrade, sc.Certs = s.AltSvc, s.H2CUpgrade, certs
		// The page's references name the site itself, so that a load of the site's URL finds
		// every object on the site.
		sc.Host = s.Name
		srv, err := server.Start(pg, sc)
		if err != nil {
			return err
		}
		r.servers = append(r.servers, srv)
	}
	if s.TLSReset {
		rs, err := listenReset(netip.AddrPortFrom(addr, uint16(cfg.PortHTTPS)).String())
		if err != nil {
			return err
		}
		r.resets = append(r.resets, rs)
	}
	return nil
}

// Close stops everything and removes the certificates.
func (r *Running) Close() error {
	var errs []error
	if r.DNS != nil {
		errs = append(errs, r.DNS.Close())
	}
	for _, s := range r.servers {
		errs = append(errs, s.Close())
	}
	for _, rs := range r.resets {
		rs.Close()
	}
	if r.Certs != nil {
		errs = append(errs, r.Certs.Remove())
	}
	return errors.Join(errs...)
}

// resetter accepts TCP connections and resets each once its first bytes (a ClientHello) arrive.
type resetter struct {
	ln net.Listener
	wg sync.WaitGroup
}

func listenReset(addr string) (*resetter, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	rs := &resetter{ln: ln}
	rs.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rs.wg.Go(func() { reset(c) })
		}
	})
	return rs, nil
}

// resetReadTimeout bounds the TLS resetter's wait for a client's first byte.
const resetReadTimeout = 10 * time.Second

func reset(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(resetReadTimeout))
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0) // close sends RST, not FIN
	}
}

func (rs *resetter) Close() {
	rs.ln.Close()
	rs.wg.Wait()
}

// Names lists the sites' names.
func Names(all []Site) string {
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.Name
	}
	return strings.Join(out, ", ")
}

// ServeReady is the ready line of `wirelab-engine sites serve`.
type ServeReady struct {
	Event  string     `json:"event"`
	CAFile string     `json:"ca_file"`
	SPKI   string     `json:"spki_sha256"` // the sites' leaf certificate's SPKI hash (Chromium)
	DNS    string     `json:"dns"`
	Sites  []SiteAddr `json:"sites"`
}

// SiteAddr is a site's name and the address its name resolves to.
type SiteAddr struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}
