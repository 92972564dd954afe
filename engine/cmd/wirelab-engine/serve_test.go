package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/wirelab/wirelab/engine/internal/cli"
)

// engine runs the test binary as wirelab-engine with args (killed after a minute at most).
func engine(args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	_ = cancel // released when the process ends: the context only bounds its life
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	return cmd
}

// startPiped starts cmd with its standard output readable from the reader returned and its
// standard error kept in the buffer returned.
func startPiped(t *testing.T, cmd *exec.Cmd) (*bufio.Reader, *bytes.Buffer) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return bufio.NewReader(out), &stderr
}

// serve starts `wirelab-engine serve` and returns it with the parsed ready line.
func serveProcess(t *testing.T, args ...string) (*exec.Cmd, *bufio.Reader, serveReady) {
	t.Helper()
	cmd := engine(append([]string{"serve"}, args...)...)
	r, stderr := startPiped(t, cmd)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := r.ReadBytes('\n')
	if err != nil {
		cmd.Wait()
		t.Fatalf("no ready line: %v; stderr: %s", err, stderr.String())
	}
	var ready serveReady
	if err := json.Unmarshal(line, &ready); err != nil || ready.Event != "ready" {
		t.Fatalf("ready line %q: %v", line, err)
	}
	return cmd, r, ready
}

func TestServeReadyLineAndSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		dir := t.TempDir()
		readyFile := filepath.Join(dir, "ready.json")
		records := filepath.Join(dir, "records.jsonl")
		certDir := filepath.Join(dir, "certs")
		cmd, r, ready := serveProcess(t, "--page", "twitter", "--shards", "2", "--addrs", "127.0.0.1,127.0.0.2",
			"--protocols", "h1,h2", "--port-http", "0", "--port-https", "0", "--dns", "127.0.0.1:0",
			"--ready-file", readyFile, "--records", records, "--cert-dir", certDir, "--max-concurrent-streams", "7")
		if ready.Ports.HTTP == 0 || ready.Ports.HTTPS == 0 || ready.Ports.QUIC != 0 || len(ready.Origins) != 2 ||
			ready.SPKIHash == "" || ready.Config.MaxConcurrentStreams != 7 || ready.DNS == "" || ready.PID != cmd.Process.Pid {
			t.Fatalf("ready line: %+v", ready)
		}
		onDisk, err := os.ReadFile(readyFile)
		if err != nil || !bytes.Contains(onDisk, []byte(`"event":"ready"`)) {
			t.Fatalf("ready file: %q %v", onDisk, err)
		}
		if st, err := os.Stat(filepath.Join(certDir, "key.pem")); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("key.pem: %v %v", st, err)
		}
		// it serves …
		url := "http://127.0.0.1:" + strconv.Itoa(ready.Ports.HTTP) + "/L/cmdtest/"
		resp, err := http.Get(url)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v", url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(body, []byte("http://s2.wirelab.test:"+strconv.Itoa(ready.Ports.HTTP)+"/L/cmdtest/")) {
			t.Fatal("the root does not reference the second shard")
		}
		// … and resolves
		m := new(mdns.Msg)
		m.SetQuestion("s2.wirelab.test.", mdns.TypeA)
		if in, err := mdns.Exchange(m, ready.DNS); err != nil || len(in.Answer) != 1 || in.Answer[0].(*mdns.A).A.String() != "127.0.0.2" {
			t.Fatalf("DNS: %v %v", in, err)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(r)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v: exit %v", sig, err)
		}
		if !bytes.Contains(rest, []byte(`"event":"stopped"`)) || !bytes.Contains(rest, []byte(`"requests":1`)) {
			t.Fatalf("%v: output after ready: %q", sig, rest)
		}
		for _, gone := range []string{readyFile, filepath.Join(certDir, "key.pem"), filepath.Join(certDir, "ca.pem")} {
			if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%v: %s left behind", sig, gone)
			}
		}
		recs, _ := os.ReadFile(records)
		if lines := strings.Count(string(recs), "\n"); lines != 1 {
			t.Errorf("%d records written, want 1", lines)
		}
	}
}

// Bad input: one line naming the field, exit 2, nothing left running.
func TestServeBadInput(t *testing.T) {
	cases := map[string][]string{
		"page: got \"nope\"":          {"--page", "nope", "--addrs", "127.0.0.1"},
		"shards: got 0":               {"--page", "twitter", "--shards", "0", "--addrs", "127.0.0.1"},
		"shards: got 65":              {"--page", "twitter", "--shards", "65", "--addrs", "127.0.0.1"},
		"protocols: got \"h4\"":       {"--page", "twitter", "--protocols", "h2,h4", "--addrs", "127.0.0.1"},
		"push: got \"some\"":          {"--page", "twitter", "--push", "some", "--addrs", "127.0.0.1"},
		"max_concurrent_streams: got": {"--page", "twitter", "--max-concurrent-streams", "0", "--addrs", "127.0.0.1"},
		"addrs: got 2":                {"--page", "twitter", "--addrs", "127.0.0.1,127.0.0.2"},
		"addrs[0]: got \"x\"":         {"--page", "twitter", "--addrs", "x"},
		"shard_mode: got \"rr\"":      {"--page", "twitter", "--shard-mode", "rr", "--addrs", "127.0.0.1"},
		"--addrs is required":         {"--page", "twitter"},
	}
	for want, args := range cases {
		var stderr bytes.Buffer
		cmd := engine(append([]string{"serve"}, args...)...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("%v: %v, want exit 2", args, err)
		}
		msg := strings.TrimSpace(stderr.String())
		if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, want) {
			t.Errorf("%v: stderr %q, want one line containing %q", args, msg, want)
		}
	}
	// in-process: the same errors are usage errors
	if err := runServe(t.Context(), []string{"--page", "twitter", "--addrs", "127.0.0.1", "--tls-version", "1.0"}, io.Discard); !cli.IsUsage(err) {
		t.Errorf("tls-version 1.0: %v", err)
	}
}

func TestServeHelp(t *testing.T) {
	var out bytes.Buffer
	if err := runServe(t.Context(), []string{"-h"}, &out); err != nil || !strings.Contains(out.String(), "--page") && !strings.Contains(out.String(), "-page") {
		t.Fatalf("help: %v %q", err, out.String())
	}
}
