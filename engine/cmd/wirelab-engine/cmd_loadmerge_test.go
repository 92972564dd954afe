package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// Two generator processes (loadgen --part 0/2 and 1/2, one start instant) load one server; the
// second is SIGKILLed mid-run. loadmerge: every interval's requests are the generators' sum, its
// p90 the merged histogram's (loadgen's Merge tests hold that value for value); the intervals after
// the kill are marked degraded and name the lost generator.
func TestLoadmergeTwoGeneratorsOneLost(t *testing.T) {
	pg, err := page.Load("synthetic:6x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := builtinOnLoopback(t, pg)
	root, _ := srv.RootURL(server.H1, "tok")
	specJSON := `{"protocol":"h1","interval_s":0.5,"think":{"mean_s":0.05},"scenario":{"start":4,"stages":[{"duration_s":3,"target":4}]}}`
	spec := writeSpec(t, specJSON)
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	start := strconv.FormatInt(ts.Nano()+int64(300*time.Millisecond), 10)
	dir := t.TempDir()
	var files []string
	var outs []*os.File
	for k := range 2 {
		f, err := os.Create(filepath.Join(dir, "g"+strconv.Itoa(k)+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		files, outs = append(files, f.Name()), append(outs, f)
	}
	var procs []*osCmd
	for k := range 2 {
		cmd := engineCmd(nil, "loadgen", "--spec", spec, "--target", root, "--resolve", "s1.wirelab.test=127.0.0.1",
			"--start-ns", start, "--part", strconv.Itoa(k)+"/2", "--histograms")
		cmd.Stdout = outs[k]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, &osCmd{cmd.Process, cmd.Wait})
	}
	time.Sleep(300*time.Millisecond + 1250*time.Millisecond) // into interval 2
	_ = procs[1].p.Kill()
	_ = procs[1].wait()
	if err := procs[0].wait(); err != nil {
		t.Fatalf("generator 0: %v", err)
	}
	for _, f := range outs {
		f.Close()
	}
	g0, err := readGeneratorOutput("g0", files[0])
	if err != nil || g0.Summary == nil || g0.Summary.Part != "0/2" {
		t.Fatalf("generator 0: %v, %+v", err, g0.Summary)
	}
	g1, err := readGeneratorOutput("g1", files[1])
	if err != nil || g1.Summary != nil {
		t.Fatalf("generator 1 (killed): %v, summary %+v", err, g1.Summary)
	}
	var stdout, stderr bytes.Buffer
	cmd := engineCmd(nil, "loadmerge", "--spec", spec, "g0="+files[0], "g1="+files[1])
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("loadmerge: %v: %s", err, stderr.String())
	}
	ivs, sum := readLines(t, stdout.Bytes())
	lostAt := len(g1.Intervals)
	if lostAt < 1 || lostAt >= len(ivs) {
		t.Fatalf("generator 1 reported %d intervals of %d", lostAt, len(ivs))
	}
	for i, iv := range ivs {
		want := g0.Intervals[i].Hits
		if i < lostAt {
			want += g1.Intervals[i].Hits
		}
		if iv.Hits != want || iv.Degraded != (i >= lostAt) {
			t.Errorf("interval %d: %d requests (generators' sum %d), degraded %v (lost after %d)", i, iv.Hits, want, iv.Degraded, lostAt)
		}
		if iv.Degraded && (len(iv.GeneratorsLost) != 1 || iv.GeneratorsLost[0] != "g1") {
			t.Errorf("interval %d: lost %v", i, iv.GeneratorsLost)
		}
		if i < lostAt && iv.PageMs != nil {
			h, err := mergedHistOf(g0.Intervals[i].PageHist, g1.Intervals[i].PageHist)
			if err != nil || iv.PageMs.P90 != h {
				t.Errorf("interval %d: p90 %v, the merged histogram's %v (%v)", i, iv.PageMs.P90, h, err)
			}
		}
	}
	if !sum.Degraded || strings.Join(sum.GeneratorsLost, ",") != "g1" || len(sum.Generators) != 2 || !sum.Generators[1].Lost {
		t.Errorf("summary: degraded %v, lost %v, generators %+v", sum.Degraded, sum.GeneratorsLost, sum.Generators)
	}

	// --from K (a cluster run's live progress): each file holds only its generator's lines from K
	// on, without the summary; the merged lines are the whole merge's from K on, byte for byte
	from := lostAt - 1
	var fromArgs []string
	for k, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev struct {
				Event string `json:"event"`
				Index int    `json:"index"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "interval" && ev.Index >= from {
				lines = append(lines, line)
			}
		}
		part := filepath.Join(dir, fmt.Sprintf("from-g%d.jsonl", k))
		_ = os.WriteFile(part, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
		fromArgs = append(fromArgs, fmt.Sprintf("g%d=%s", k, part))
	}
	var fromOut bytes.Buffer
	stderr.Reset()
	cmd = engineCmd(nil, append([]string{"loadmerge", "--spec", spec, "--from", strconv.Itoa(from)}, fromArgs...)...)
	cmd.Stdout, cmd.Stderr = &fromOut, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("loadmerge --from %d: %v: %s", from, err, stderr.String())
	}
	whole := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if want := strings.Join(whole[from:len(ivs)], "\n"); strings.TrimSpace(fromOut.String()) != want {
		t.Errorf("loadmerge --from %d:\n%s\nwant the whole merge's intervals from %d:\n%s", from, fromOut.String(), from, want)
	}

	// --out: the same merge written as a lab run's directory (the cluster path), with the server's
	// samples beside it; exit 1 with the degraded line after everything is written.
	samples := filepath.Join(dir, "server.jsonl")
	var sl []string
	for i := range ivs {
		sl = append(sl, fmt.Sprintf(`{"index":%d,"t_s":%d,"cpu_ms":%d,"cpu_util":0.%d,"source":"cgroup-v1","gauges":{}}`, i, i+1, 10*i, i+1))
	}
	_ = os.WriteFile(samples, []byte(strings.Join(sl, "\n")+"\n"), 0o600)
	out := filepath.Join(dir, "merged")
	stderr.Reset()
	cmd = engineCmd(nil, "loadmerge", "--spec", spec, "--out", out, "--server", samples, "g0="+files[0], "g1="+files[1])
	cmd.Stderr = &stderr
	err = cmd.Run()
	if msg := strings.TrimSpace(stderr.String()); exitCodeOf(err) != 1 || !strings.Contains(msg, "degraded: generator(s) lost mid-run (g1 after") || strings.Contains(msg, "\n") {
		t.Fatalf("loadmerge --out: exit %d, stderr %q; want 1 and the degraded line", exitCodeOf(err), msg)
	}
	var res struct {
		Degraded       bool `json:"degraded"`
		Intervals      int  `json:"intervals"`
		ServerSamples  int  `json:"server_samples"`
		ServerMeasured bool `json:"server_measured"`
		Outcomes       struct {
			ServerCPUUtilMax *float64 `json:"server_cpu_util_max"`
		} `json:"outcomes"`
		Generators []loadgen.GeneratorRun `json:"generators"`
	}
	data, err := os.ReadFile(filepath.Join(out, "loadtest.json"))
	if err != nil || json.Unmarshal(data, &res) != nil {
		t.Fatalf("loadtest.json: %v", err)
	}
	if !res.Degraded || res.Intervals != len(ivs) || res.ServerSamples != len(ivs) || !res.ServerMeasured || len(res.Generators) != 2 ||
		res.Outcomes.ServerCPUUtilMax == nil || *res.Outcomes.ServerCPUUtilMax != float64(len(ivs))/10 {
		t.Errorf("loadtest.json: %s", data)
	}
	written, err := os.ReadFile(filepath.Join(out, "intervals.jsonl"))
	if err != nil || !bytes.Equal(written, stdout.Bytes()[:len(written)]) {
		t.Errorf("intervals.jsonl is not loadmerge's merged intervals (%v)", err)
	}
}

type osCmd struct {
	p    *os.Process
	wait func() error
}

// mergedHistOf is the p90 (ms) of the merged encoded histograms (base64 of HdrHistogram's V2
// compressed encoding, as loadgen --histograms prints them), read with the library alone.
func mergedHistOf(encoded ...string) (float64, error) {
	var merged *hdrhistogram.Histogram
	for _, e := range encoded {
		if e == "" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(e)
		if err != nil {
			return 0, err
		}
		h, err := hdrhistogram.Decode(b)
		if err != nil {
			return 0, err
		}
		if merged == nil {
			merged = h
		} else {
			merged.Merge(h)
		}
	}
	if merged == nil || merged.TotalCount() == 0 {
		return 0, fmt.Errorf("no value")
	}
	return float64(merged.ValueAtQuantile(90)) / 1000, nil
}

// Bad input: one line naming the file or argument, exit 2.
func TestLoadmergeBadInput(t *testing.T) {
	spec := writeSpec(t, `{"protocol":"h1","scenario":{"stages":[{"duration_s":1,"target":1}]}}`)
	dir := t.TempDir()
	noHist := filepath.Join(dir, "nohist.jsonl")
	_ = os.WriteFile(noHist, []byte(`{"event":"interval","index":0,"t_start_s":0,"t_end_s":1,"pages":3,"hits":3}`+"\n"), 0o600)
	garbage := filepath.Join(dir, "garbage.jsonl")
	_ = os.WriteFile(garbage, []byte("hello\n{\"event\":\"summary\"}\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--spec", spec}, "no generator given"},
		{[]string{"g0=" + noHist}, "--spec: required"},
		{[]string{"--spec", spec, "g0"}, `"g0": want NAME=FILE`},
		{[]string{"--spec", spec, "g0=" + noHist, "g0=" + noHist}, "generator g0 given twice"},
		{[]string{"--spec", spec, "g0=/nonexistent"}, "generator g0: open /nonexistent"},
		{[]string{"--spec", spec, "g0=" + garbage}, "garbage.jsonl line 1: not a JSON event"},
		{[]string{"--spec", spec, "g0=" + noHist}, "generator g0 interval 0: page_hist holds 0 pages, the line says 3"},
		{[]string{"--spec", spec, "--from", "x", "g0=" + noHist}, `loadmerge: invalid value "x" for flag -from: parse error; run wirelab-engine loadmerge -h for the flags`},
		{[]string{"--spec", spec, "--from", "-1", "g0=" + noHist}, "--from -1: want an interval index ≥ 0"},
		{[]string{"--spec", spec, "--from", "2", "--out", filepath.Join(dir, "o"), "g0=" + noHist}, "--from 2: not with --out"},
		{[]string{"--spec", spec, "--from", "2", "g0=" + noHist}, "generator g0: interval line 1 has index 0, want 2"},
		{[]string{"--spec", spec, "--nope", "g0=" + noHist}, "loadmerge: flag provided but not defined: -nope; run wirelab-engine loadmerge -h"},
	} {
		wantRefused(t, tc.args, engineCmd(nil, append([]string{"loadmerge"}, tc.args...)...), tc.want)
	}
}
