package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// Certs is a per-run CA and a leaf certificate for *.wirelab.test, wirelab.test and the origin
// addresses, both ECDSA P-256. The CA's private key is never written: it signs the leaf and is
// dropped.
type Certs struct {
	// Dir holds ca.pem, cert.pem and key.pem (mode 0600).
	Dir string
	// CAPEM is the CA certificate (PEM), what a client must trust.
	CAPEM []byte
	// SPKIHash is base64(sha256(leaf SubjectPublicKeyInfo)), the form Chromium's
	// --ignore-certificate-errors-spki-list takes.
	SPKIHash string
	// Leaf is the server's certificate and key.
	Leaf tls.Certificate

	files      []string
	createdDir bool
}

// Files in a cert directory.
const (
	CAFile   = "ca.pem"
	CertFile = "cert.pem"
	KeyFile  = "key.pem"
)

// NewCerts generates the CA and leaf and writes them to dir ("" = a new temporary directory).
func NewCerts(dir string, addrs []netip.Addr) (*Certs, error) {
	c := &Certs{Dir: dir}
	if dir == "" {
		d, err := os.MkdirTemp("", "wirelab-certs-")
		if err != nil {
			return nil, fmt.Errorf("certs: %w", err)
		}
		c.Dir, c.createdDir = d, true
	} else if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("certs: %w", err)
		}
		c.createdDir = true
	}
	if err := c.generate(addrs); err != nil {
		c.Remove()
		return nil, err
	}
	return c, nil
}

func (c *Certs) generate(addrs []netip.Addr) error {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "wirelab per-run CA", Organization: []string{"wirelab"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("certs: CA: %w", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "*.wirelab.test", Organization: []string{"wirelab"}},
		DNSNames:     []string{"*.wirelab.test", "wirelab.test"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, a := range addrs {
		leafTmpl.IPAddresses = append(leafTmpl.IPAddresses, net.IP(a.AsSlice()))
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("certs: leaf: %w", err)
	}
	leaf, _ := x509.ParseCertificate(leafDER)
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	c.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	c.SPKIHash = base64.StdEncoding.EncodeToString(sum[:])
	c.Leaf = tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey, Leaf: leaf}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{CAFile, c.CAPEM, 0o644}, {CertFile, certPEM, 0o644}, {KeyFile, keyPEM, 0o600}} {
		path := filepath.Join(c.Dir, f.name)
		// O_EXCL: never follow or reuse a file someone else put there.
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err != nil {
			return fmt.Errorf("certs: %w", err)
		}
		c.files = append(c.files, path)
		if _, err := fh.Write(f.data); err != nil {
			fh.Close()
			return fmt.Errorf("certs: %w", err)
		}
		if err := fh.Close(); err != nil {
			return fmt.Errorf("certs: %w", err)
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

// CAPool returns a pool holding only the CA, for clients.
func (c *Certs) CAPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CAPEM)
	return pool
}

// CAPath is the path of ca.pem.
func (c *Certs) CAPath() string { return filepath.Join(c.Dir, CAFile) }

// Remove deletes the files written (and the directory when it was created for them).
func (c *Certs) Remove() error {
	var errs []error
	for _, f := range c.files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	c.files = nil
	if c.createdDir {
		if err := os.Remove(c.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		c.createdDir = false
	}
	return errors.Join(errs...)
}

// LoadCerts reads the certificates NewCerts wrote in dir (ca.pem, cert.pem, key.pem), for a
// server that serves a run's existing certificates: the lab makes them once per run for whichever
// implementation serves it. The files stay the caller's: Remove does not delete them.
func LoadCerts(dir string) (*Certs, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	leaf, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	if leaf.Leaf == nil {
		if leaf.Leaf, err = x509.ParseCertificate(leaf.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certs: %w", err)
		}
	}
	sum := sha256.Sum256(leaf.Leaf.RawSubjectPublicKeyInfo)
	return &Certs{Dir: dir, CAPEM: caPEM, SPKIHash: base64.StdEncoding.EncodeToString(sum[:]), Leaf: leaf}, nil
}
