package main

import (
	"os"
	"testing"
)

// testMainEnv makes the test binary act as wirelab-engine itself, so that subprocess tests (signals,
// exit codes, ready lines) exercise the real main without a separate build.
const testMainEnv = "WIRELAB_ENGINE_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(testMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}
