package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The cluster tasks' flags (docs/loadtest.md, "A Dask cluster"): bad input is one line naming the
// flag, exit 2, before anything is created (the run itself is tested with real workers by
// tests/test_loadtest_cluster_root.py).
func TestLoadtestClusterFlagsBadInput(t *testing.T) {
	spec := writeSpec(t, `{"page":"synthetic:2x1kB","protocol":"h2","server":{"impl":"builtin"},"interval_s":1,"scenario":{"stages":[{"duration_s":2,"target":2}]}}`)
	dir := t.TempDir()
	serving := filepath.Join(dir, "serving.json")
	_ = os.WriteFile(serving, []byte(`{"event":"serving","url":"https://s1.wirelab.test/L/x/","addr":"169.254.169.254","port":443,"names":["s1.wirelab.test"]}`), 0o600)
	garbage := filepath.Join(dir, "garbage.json")
	_ = os.WriteFile(garbage, []byte(`{"event":"ready"}`), 0o600)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--serve", "10.0.0.5", "--await-start"}, "--allow-from: required with --serve"},
		{[]string{"--serve", "10.0.0.5", "--allow-from", "10.0.0.6"}, "--await-start: required with --serve and --serving"},
		{[]string{"--serve", "127.0.0.1", "--allow-from", "10.0.0.6", "--await-start"}, "--serve 127.0.0.1: want the IPv4 unicast address"},
		{[]string{"--serve", "169.254.169.254", "--allow-from", "10.0.0.6", "--await-start"}, "--serve 169.254.169.254: a special-purpose address"},
		{[]string{"--serve", "10.0.0.5", "--allow-from", "ten", "--await-start"}, `--allow-from ten: "ten" is not an IP address or prefix`},
		{[]string{"--serve", "10.0.0.5", "--serving", serving, "--await-start"}, "--serve and --serving: a task is the server or a generator"},
		{[]string{"--await-start"}, "--await-start: only with --serve, --serving or a spec's target"},
		{[]string{"--part", "0/2"}, "--part 0/2: only with --serving"},
		{[]string{"--allow-from", "10.0.0.6"}, "--allow-from: only with --serve"},
		{[]string{"--serving", garbage, "--await-start"}, "not a server task's serving line"},
		{[]string{"--serving", serving, "--await-start"}, "addr 169.254.169.254: a special-purpose address"},
		{[]string{"--serving", serving, "--await-start", "--generators", "2"}, "--generators 2: a cluster task runs one generator"},
	} {
		args := append([]string{"loadtest", "--spec", spec, "--out", out}, tc.args...)
		wantRefused(t, tc.args, engineCmd(nil, args...), tc.want)
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: created %s", tc.args, out)
		}
	}
}
