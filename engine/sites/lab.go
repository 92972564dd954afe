package sites

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/egress"
	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/child"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
)

// How long StartLab waits for the server's ready line, and Close for the interrupted server to exit
// before it kills it.
const (
	readyTimeout = 60 * time.Second
	stopGrace    = 10 * time.Second
)

// DefaultNet is the local internet's path unless told otherwise: a short round trip, so that a
// probe of the whole catalog takes seconds; each site's ExtraRTT is added to it.
const DefaultNet = "rtt=10ms"

// LabConfig describes a local internet run.
type LabConfig struct {
	// Engine is the wirelab-engine binary that runs `sites serve` in the server namespace.
	Engine string
	// Env is added to that process's environment.
	Env []string
	// Net is the network profile of every site's path (docs/profile-grammar.md); default
	// DefaultNet. The sites' ExtraRTT is added as origin_delay.
	Net string
	// PcapDir, when set, receives client.pcap and server.pcap of what crossed the link.
	PcapDir string
	// Emulator, when set, is the emulated path as the caller built it from Profile(net) (a live
	// trial: its seed, packet log and per-load captures); Net and PcapDir are then not used. Its
	// topology gets the run's resolv.conf (Topology.Resolver) either way.
	Emulator *emulator.Config
	// Stderr receives the server process's diagnostics (default os.Stderr).
	Stderr io.Writer
	// OnEgress, when set, receives the DNS forwarder's admissions and refusals.
	OnEgress func(egress.Event)
}

// Lab is the local internet running: the emulated path to the egress router (an engine/netns
// egress topology whose far side is the local internet's namespace: one origin address per served
// site, their DNS server at netns.InternetDNSAddr), the sites' servers there, the router's DNS
// forwarder at netns.DNSAddr, and a resolv.conf in the client namespace naming it — the path a
// public live load takes, with the local internet as its far side (docs/egress.md).
type Lab struct {
	E      *emulator.Emulator
	Sites  []Site
	CAFile string // the run's CA (PEM), trusted by probes run in the lab
	// SPKIHash is base64(sha256(SubjectPublicKeyInfo)) of the certificate every site serves (one
	// leaf, signed by CAFile's CA): what Chromium's --ignore-certificate-errors-spki-list takes.
	SPKIHash string

	certDir string
	server  *child.Process
	dns     *egress.Process
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

// Profile is the lab's resolved network profile: net with each served site's ExtraRTT as the
// origin_delay of its origin.
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

// StartLab builds the topology, starts `sites serve` in the server namespace and waits for its
// ready line. On error nothing is left.
func StartLab(cfg LabConfig) (*Lab, error) {
	catalog := Catalog()
	var ecfg emulator.Config
	if cfg.Emulator != nil {
		ecfg = *cfg.Emulator
	} else {
		r, err := Profile(cfg.Net)
		if err != nil {
			return nil, err
		}
		if ecfg, err = emulator.ConfigFromProfile(r, len(Served(catalog)), 1); err != nil {
			return nil, err
		}
		ecfg.PcapDir = cfg.PcapDir
	}
	ecfg.Topology.Resolver = true
	ecfg.Topology.Egress = &netns.Egress{Far: netns.FarInternet}
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	e, err := emulator.Start(ecfg)
	if err != nil {
		return nil, err
	}
	l := &Lab{E: e, Sites: catalog}
	// The private directory is the run's (netns.OwnDir): removed with the topology by Close, and
	// by gc after a SIGKILL.
	certDir := filepath.Join(os.TempDir(), PrivatePrefix+e.Topo.ID)
	if err := e.Topo.OwnDir(certDir); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	if err := os.Mkdir(certDir, 0o700); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	l.certDir = certDir
	server := e.Topo.Command(netns.Internet, cfg.Engine, "sites", "serve", "--cert-dir", certDir)
	server.Env = append(os.Environ(), cfg.Env...)
	server.Stderr = stderr
	var info ServeReady
	if l.server, err = child.Start(context.Background(), "sites serve", server, readyTimeout, &info, nil); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	l.CAFile, l.SPKIHash = info.CAFile, info.SPKI
	if l.dns, err = egress.Start(e.Topo, cfg.Engine, append(os.Environ(), cfg.Env...), cfg.OnEgress); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return l, nil
}

// Env is what commands in the client namespace are given: the CA to trust and the DNS server.
func (l *Lab) Env() []string {
	return []string{"WIRELAB_CA_FILE=" + l.CAFile, "WIRELAB_DNS_ADDR=" + netns.DNSAddr.String(),
		"WIRELAB_SITES=" + strings.Join(l.URLs(), ",")}
}

// URLs are the catalog's URLs.
func (l *Lab) URLs() []string {
	out := make([]string, len(l.Sites))
	for i, s := range l.Sites {
		out[i] = s.URL()
	}
	return out
}

// Command prepares argv in the client namespace with Env added to the environment.
func (l *Lab) Command(argv ...string) *exec.Cmd {
	cmd := l.E.Topo.Command(netns.Client, argv...)
	cmd.Env = append(os.Environ(), l.Env()...)
	return cmd
}

// Close stops the server, removes the topology (and everything in it) and the certificates.
func (l *Lab) Close() error {
	_, err := l.Shutdown()
	return err
}

// Shutdown is Close, returning the emulator's summary of the run.
func (l *Lab) Shutdown() (emulator.Summary, error) {
	var errs []error
	if l.dns != nil {
		if _, err := l.dns.Stop(); err != nil {
			errs = append(errs, err)
		}
		l.dns = nil
	}
	if l.server != nil {
		if err := l.server.Stop(os.Interrupt, stopGrace); err != nil {
			errs = append(errs, err)
		}
		l.server = nil
	}
	sum, err := l.E.Stop()
	return sum, errors.Join(append(errs, err)...)
}

// PrivatePrefix names a lab's private directory in os.TempDir(): wirelab-sites-<run id> (0700),
// holding the sites' certificates (the key 0600).
const PrivatePrefix = "wirelab-sites-"
