package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Which of this package's tests run in parallel (docs/testing.md, "The go phase").
//
// The package's long tests are whole trials, load tests and Chromium loads through real-time
// emulators; run one after another they took 380 s of the go phase's 541 s on CI's 2-core machine,
// one core busy and the other idle. A top-level test that calls t.Parallel() waits until every
// test that does not has finished, then runs beside the other parallel ones (two at a time on two
// cores): so a test that stays serial never shares the machine with this package's parallel tests.
//
// A test may be parallel only if nothing it asserts depends on the machine's speed: objects, bytes,
// connections, records, exit codes, files. Serial stay:
//   - every test with a timing bound (timebound.Retry: round trips, bandwidth, AQM delays, replay's
//     critical path, a deadline to stop) — another test's emulator and loader would be its noise;
//   - tests whose checks compare two clocks of one run (the capture's ToW against the packet log's
//     within 1 ms in TestLiveTrialLocalInternet, a status sample within 0.25 s of its interval in
//     TestLoadtestLab), priority order through the emulator, a benchmark's loss count;
//   - tests that run `wirelab-engine gc` or kill runs and count what is left.
//
// TestParallelTestsHaveNoTimingBound keeps the first and the last rule mechanically.
func TestParallelTestsHaveNoTimingBound(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	parallel := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			var isParallel, timed, gc bool
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok {
						isParallel = isParallel || (x.Name == "t" && n.Sel.Name == "Parallel")
						timed = timed || x.Name == "timebound"
					}
				case *ast.BasicLit:
					gc = gc || n.Value == `"gc"`
				}
				return true
			})
			if !isParallel {
				continue
			}
			parallel++
			if timed {
				t.Errorf("%s (%s) is parallel and checks a timing bound: timing-bound tests stay serial", fn.Name.Name, name)
			}
			if gc {
				t.Errorf("%s (%s) is parallel and runs gc: tests that collect and count leftovers stay serial", fn.Name.Name, name)
			}
		}
	}
	if parallel == 0 {
		t.Errorf("no parallel test found in %d files: the check reads nothing", len(files))
	}
}
