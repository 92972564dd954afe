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

// The virtual-user generator depends on what a generator needs — the loaders, the spec, the
// contract, the address policy — and not on the lab (namespaces, TCP+, the TUN device, the
// emulator): issue 25 holds it to 20 engine packages besides itself (`go list -deps ./loadgen`).
func TestLoadgenDependsOnLittle(t *testing.T) {
	const most = 20
	modPath, pkgs := module(t)
	imports := map[string][]string{}
	for _, p := range pkgs {
		imports[p.ImportPath] = p.Imports
	}
	root := modPath + "/loadgen"
	if _, ok := imports[root]; !ok {
		t.Fatalf("no package %s", root)
	}
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, imp := range imports[p] {
			if strings.HasPrefix(imp, modPath+"/") && !seen[imp] {
				seen[imp] = true
				walk(imp)
			}
		}
	}
	walk(root)
	var deps []string
	for d := range seen {
		deps = append(deps, strings.TrimPrefix(d, modPath+"/"))
	}
	sort.Strings(deps)
	if len(deps) > most {
		t.Errorf("loadgen depends on %d engine packages (at most %d): %s", len(deps), most, strings.Join(deps, " "))
	}
	for _, d := range deps {
		if f, _ := Place(d); f == Host && d != "policy" {
			t.Errorf("loadgen depends on %s (%s floor): the lab's machinery, not a generator's", d, f)
		}
	}
}
