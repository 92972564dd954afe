package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/probe"
	"github.com/wirelab/wirelab/engine/sites"
)

// Bad input: one line naming the field, exit 2, and nothing resolved or sent: each is refused
// before a resolver is even chosen. Public names among them: the probe runs where no route leads
// off the machine (offMachine).
func TestProbeBadInput(t *testing.T) {
	run := offMachine(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("# nothing\n\n"), 0o644)
	million := filepath.Join(dir, "million.txt")
	var b bytes.Buffer
	for i := range 1_000_000 {
		fmt.Fprintf(&b, "s%d.example.org\n", i)
	}
	os.WriteFile(million, b.Bytes(), 0o644)
	cases := map[string][]string{
		"sites: none given":             {},
		"has no sites":                  {"--list", empty},
		"has more than 1000 sites":      {"--list", million},
		`scheme "ftp" is not http`:      {"ftp://example.org/"},
		`scheme "ws" is not http`:       {"h1.wirelab.test", "ws://example.org/"},
		"must be a valid URL":           {"https://example.org/%zz"},
		"is not a valid host name":      {"https://exa_mple..org/"},
		"give one or the other":         {"--list", empty, "h1.wirelab.test"},
		"rate: got":                     {"--rate", "1000/s", "h1.wirelab.test"},
		"concurrency: got 0":            {"--concurrency", "0", "h1.wirelab.test"},
		"timeout: got":                  {"--timeout", "1ms", "h1.wirelab.test"},
		"max-sites: got 0":              {"--max-sites", "0", "h1.wirelab.test"},
		"at most 1 sites":               {"--max-sites", "1", "a.wirelab.test", "b.wirelab.test"},
		"a public name":                 {"example.org"},
		"not an address of this run":    {"93.184.215.14"},
		"flag provided but not defined": {"--no-such-flag", "h1.wirelab.test"},
		"dns: got":                      {"--dns", "not-an-ip", "h1.wirelab.test"},
		"--ca " + filepath.Join(dir, "missing.pem") + ": does not exist": {"--ca", filepath.Join(dir, "missing.pem"), "h1.wirelab.test"},
	}
	for want, args := range cases {
		var stdout, stderr bytes.Buffer
		cmd := run(append([]string{"probe"}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := exitCodeOf(cmd.Run())
		msg := strings.TrimSpace(stderr.String())
		if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %d bytes; want exit 2 and one line with %q", args, code, msg, stdout.Len(), want)
		}
	}
}

// sites ls --json lists every catalog site with its planned address and expectations.
func TestSitesLs(t *testing.T) {
	out, err := engine("sites", "ls", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Name     string                       `json:"name"`
		URL      string                       `json:"url"`
		Addr     string                       `json:"addr"`
		Expected map[string]sites.Expectation `json:"expected"`
		Refused  bool                         `json:"expected_refused"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatal(err)
	}
	catalog := sites.Catalog()
	if len(list) != len(catalog) {
		t.Fatalf("%d sites listed, catalog has %d", len(list), len(catalog))
	}
	for i, s := range list {
		if s.Name != catalog[i].Name || s.URL != catalog[i].URL() || s.Addr == "" {
			t.Errorf("%d: %+v", i, s)
		}
		if s.Refused != (len(s.Expected) == 0) || (!s.Refused && len(s.Expected) != len(probe.Protocols)) {
			t.Errorf("%s: refused %v, %d expectations", s.Name, s.Refused, len(s.Expected))
		}
	}
}
