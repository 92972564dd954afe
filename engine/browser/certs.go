package browser

import (
	"bufio"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/userpath"
)

// SPKIHash is base64(sha256(SubjectPublicKeyInfo)) of a certificate: the value Chromium's
// --ignore-certificate-errors-spki-list takes.
func SPKIHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// SPKIHashesFromPEMFile returns the SPKI hash of every certificate in a PEM file (a regular file
// of at most 1 MiB: a *userpath.Problem otherwise).
func SPKIHashesFromPEMFile(path string) ([]string, error) {
	data, err := userpath.ReadFile(path, 1<<20)
	if err != nil {
		return nil, err
	}
	var out []string
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, SPKIHash(c))
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate in the file")
	}
	return out, nil
}

// CheckResolvConf checks that a resolv.conf names want as its only nameserver: Chromium then
// resolves through the run's DNS server (ip netns exec binds /etc/netns/<ns>/resolv.conf over
// /etc/resolv.conf).
func CheckResolvConf(path string, want netip.Addr) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var servers []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			servers = append(servers, fields[1])
		}
	}
	if len(servers) == 1 {
		if a, err := netip.ParseAddr(servers[0]); err == nil && a == want {
			return nil
		}
	}
	return fmt.Errorf("%s names nameservers [%s], not only %s: run browse in the client namespace (ip netns exec, with the run's resolv.conf) or use --resolve", path, strings.Join(servers, " "), want)
}
