package floors

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath  string
	Imports     []string
	TestImports []string
}

// module lists the module's packages with their imports.
func module(t *testing.T) (modPath string, pkgs []pkg) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	modPath = strings.TrimSpace(string(out))
	cmd := exec.Command("go", "list", "-json", modPath+"/...")
	b, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v: %s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return modPath, pkgs
}

// No package imports one on a higher floor — in its code or in its own tests (a test double or a
// helper shipped for tests sits where its users can import it) — and every package has a floor.
func TestNoUpwardImports(t *testing.T) {
	modPath, pkgs := module(t)
	if len(pkgs) < 30 {
		t.Fatalf("go list found %d packages of %s; expected the whole engine", len(pkgs), modPath)
	}
	var problems []string
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, modPath), "/")
		from, ok := Place(rel)
		if !ok {
			problems = append(problems, rel+": on no floor; place it in floors.Of (and in docs/architecture.md)")
			continue
		}
		check := func(imports []string, what string) {
			for _, imp := range imports {
				if !strings.HasPrefix(imp, modPath+"/") {
					continue
				}
				dep := strings.TrimPrefix(imp, modPath+"/")
				to, ok := Place(dep)
				if ok && to > from {
					problems = append(problems, rel+" ("+from.String()+")"+what+" imports "+dep+" ("+to.String()+"), a higher floor")
				}
			}
		}
		check(p.Imports, "")
		check(p.TestImports, "'s tests")
	}
	sort.Strings(problems)
	for _, pr := range problems {
		t.Error(pr)
	}
}

func TestPlace(t *testing.T) {
	for path, want := range map[string]Floor{"internal/seam": Ground, "tcpplus/internal/nspath": Host, "tcpplus/backoff": Endpoint,
		"trial": Run, "cmd/wirelab-engine": Command} {
		if got, ok := Place(path); !ok || got != want {
			t.Errorf("Place(%s) = %v, %v; want %v", path, got, ok, want)
		}
	}
	if _, ok := Place("nosuch"); ok {
		t.Error("an unknown package has a floor")
	}
}
