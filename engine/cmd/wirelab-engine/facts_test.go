package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestFactsFileIsCurrent: the control plane's copy of the engine's facts is exactly what the engine
// says today. A change to a preset, a unit, a limit or a corpus page is made in the engine and
// reaches Python by regenerating the file (make facts), never by editing it.
func TestFactsFileIsCurrent(t *testing.T) {
	var want bytes.Buffer
	if err := writeFacts(&want); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "..", factsFile)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%s is not what `wirelab-engine facts` prints today: run `make facts` and commit the file", factsFile)
	}
}

// TestProfilesAndFactsCommands: both print JSON and refuse arguments they do not take (exit 2).
func TestProfilesAndFactsCommands(t *testing.T) {
	for _, args := range [][]string{{"profiles", "ls"}, {"facts"}} {
		out, _, code := runEngine(t, args...)
		if code != 0 || !bytes.HasPrefix([]byte(out), []byte("{")) {
			t.Errorf("%v: exit %d, %.80q", args, code, out)
		}
	}
	for _, args := range [][]string{{"profiles"}, {"profiles", "show"}, {"facts", "extra"}} {
		if _, stderr, code := runEngine(t, args...); code != 2 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want a usage error (2)", args, code, stderr)
		}
	}
}
