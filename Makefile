# wirelab — see README.md. `make demo` runs the demo, `make test` the tests; both set up what they need.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV    := .venv
PY      := $(VENV)/bin/python
ENGINE  := bin/wirelab-engine
STAMPS  := .stamps
GIT_SHA := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X github.com/wirelab/wirelab/engine/internal/version.GitSHA=$(GIT_SHA)
GO_SRC  := $(shell find engine -name '*.go' -o -name 'go.mod' -o -name 'go.sum' -o -name '*.json' -o -name '*.tmpl' 2>/dev/null)
# -p 1: one test binary at a time. Root tests of several packages run emulators, whose processes are
# real-time (SCHED_RR) while they run (docs/network.md); two at once on a 2-core machine starve the loaders.
GOTEST_FLAGS ?= -count=1 -p 1 -timeout 40m
PYTEST_FLAGS ?= -q
# Each test's time, for the list of the 10 slowest that `make test` ends with (scripts/test_times.py),
# and each phase's wall and CPU time (PHASE_START … $(call PHASE_END,name) around one recipe line).
TIMES   := $(STAMPS)/test-times
# scripts/test_times.py needs only the standard library: the system's python3 runs it, so that the go
# phase can start (and record) before the venv is made (make test makes it beside the go phase)
TIMES_PY := python3
PHASE_START = t0=$$(date +%s.%N); l0=$$(cut -d' ' -f1-3 /proc/loadavg);
# A phase that runs beside another names it as $(2): its wall time is not added to the total.
PHASE_RECORD = rc=$$?; times >$(CURDIR)/$(TIMES)/.times-$(1); $(TIMES_PY) $(CURDIR)/scripts/test_times.py record \
               $(CURDIR)/$(TIMES)/phases.jsonl $(1) "$$t0" "$$l0" $(CURDIR)/$(TIMES)/.times-$(1) $$rc $(2)
PHASE_END = $(call PHASE_RECORD,$(1),$(2)); exit $$rc
# As root (CI), every test runs in a network namespace of its own holding only a loopback device: no
# test can send a packet off the machine, even through a broken guard. The tests that give a guard
# a target off the machine (a public name, a documentation address) run only there and skip
# elsewhere (engine/internal/offmachine, tests/conftest.py).
ISOLATE := $(if $(filter 0,$(shell id -u)),unshare --net -- sh -c 'ip link set lo up && exec "$$@"' isolate)

.PHONY: help setup build test test-go test-py fuzz-short lint bench demo clean bpf conformance facts speedline
help:
	@echo "make demo    set up, build and run the demo sweep (report path printed at the end)"
	@echo "make test    set up, build, lint and run every test (root tests too when run as root), fuzzing included;"
	@echo "             ends with its 10 slowest tests"
	@echo "make fuzz-short  run each Go fuzz target for FUZZTIME (default 3s)"
	@echo "make setup   install Debian, Python and Go dependencies (idempotent)"
	@echo "make build   build bin/wirelab-engine"
	@echo "make lint    go vet, gofmt, ruff, mypy"
	@echo "make bench   print the benchmarks' figures"
	@echo "make conformance  h2spec against every server under test, checked against docs/server.md (minutes; root)"
	@echo "make bpf     regenerate the committed BPF objects (needs clang and libbpf-dev)"
	@echo "make facts   regenerate wirelab/_engine_facts.json (presets, units, corpus facts) from the engine"

setup: $(STAMPS)/system $(STAMPS)/venv $(STAMPS)/gomod

$(STAMPS)/system: scripts/apt-packages.txt scripts/setup-system.sh
	@mkdir -p $(STAMPS)
	scripts/setup-system.sh
	@touch $@

$(STAMPS)/venv: pyproject.toml
	@mkdir -p $(STAMPS)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@

$(STAMPS)/gomod: engine/go.mod $(wildcard engine/go.sum)
	@mkdir -p $(STAMPS)
	cd engine && go mod download
	@touch $@

build: $(ENGINE)

$(ENGINE): $(STAMPS)/gomod $(GO_SRC)
	@mkdir -p bin
	cd engine && go build -trimpath -ldflags "$(LDFLAGS)" -o ../$(ENGINE) ./cmd/wirelab-engine

# make test runs the phases two at a time (TEST_OVERLAPPED, further down), the phases beside the go
# phase in a cpu cgroup that is idle to the machine and has no real-time budget
# (scripts/beside-cgroup.sh), so that py-parallel's emulating engines cannot make themselves SCHED_RR
# beside the go phase's timing bounds; as root without such a cgroup, and with `make test
# TEST_OVERLAP=0`, one after another (test-go, test-py, fuzzing last; 21.7 min on CI against 16.5
# two at a time before the cgroup). docs/testing.md, "Two phases at a time", has the figures.
# (SEQUENTIAL names $(MAKE) indirectly: a recipe line that names it runs even under make -n.)
TEST_OVERLAP ?= 1
SEQUENTIAL = $(MAKE) --no-print-directory setup lint test-go test-py fuzz-short
# The go phase needs the system's packages, the Go modules and the engine, not the venv: two at a
# time, the venv (≈ 55 s on a clean checkout: pip) and lint (≈ 25 s) are made beside it, ahead of
# py-parallel; the serial Python tests, in front after the go phase, take the venv under the same
# lock (SETUP_VENV: whichever comes first makes it, the other finds it made).
test: $(STAMPS)/system $(STAMPS)/gomod build
	@mkdir -p $(TIMES); rm -f $(TIMES)/phases.jsonl
	$(if $(filter 0,$(TEST_OVERLAP)),$(SEQUENTIAL),$(TEST_OVERLAPPED))
	@$(TIMES_PY) scripts/test_times.py slowest 10 $(TIMES)/phases.jsonl $(TIMES)/go.jsonl $(TIMES)/pytest-parallel.xml \
	  $(TIMES)/pytest-serial.xml

# Every native Go fuzz target of engine/ (parsers, the SPDY session, the link model, the HTTP/2
# observer, page JSON, HAR import, the trial spec decoder, mahimahi traces), each for FUZZTIME:
# a crash fails the target and leaves its input in engine/<package>/testdata/fuzz (scripts/fuzz-short.sh).
FUZZTIME ?= 3s
# Beside the go phase (make test) the fuzzers run at idle priority and get what it leaves, about one
# of the 2 cores. 3 s each: with the venv and lint also beside, 6 s (the work 3 s gave on an idle
# machine) ran the fuzzers into the go phase's last, two-core minutes (clean-clone CI of 9fb948a:
# go-fuzz 322 s, the go phase 79 s longer) — half the fuzzing work, a smoke check each, for the
# 15-minute budget; `make fuzz-short FUZZTIME=…` fuzzes longer.
FUZZTIME_BESIDE ?= 3s
# A phase that runs beside another runs in the scheduler's idle class: any other runnable process
# takes the CPU from it at once (a waking task preempts it; a core running only idle-class tasks counts
# as idle when the kernel places a task), so the phase in front sees only shared caches.
IDLE := chrt --idle 0
FUZZ_PHASE = $(PHASE_START) FUZZTIME=$(1) $(2) scripts/fuzz-short.sh; $(call PHASE_END,go-fuzz,$(3))
fuzz-short: $(STAMPS)/gomod
	@mkdir -p $(TIMES)
	$(call FUZZ_PHASE,$(FUZZTIME))

# Every package's tests (-p 1: see GOTEST_FLAGS; inside engine/cmd/wirelab-engine the tests without a
# timing bound run two at a time after the others, parallel_test.go — and that package comes last, so
# that those two-core minutes are the phase's last: see "test:"), then, under the race detector
# with -short (the tests that check physical timing bounds or take long skip there: the detector
# slows the code it watches 2–20×, which such bounds would report as the path's), the packages that
# scripts/race-packages.sh names (tests need no root; code or tests concurrent), one at a time:
# -short tests of probe and loadgen still judge real exchanges by the clock (1 s timeouts, 0.5 s
# intervals). Their race binaries are compiled on both cores first (-p 2, run by /bin/true).
# docs/testing.md has the figures behind each choice.
# h2spec (the HTTP/2 conformance suite) runs on its own with -v so that its pass count is printed.
# $(1) of each phase: the phase it runs beside (phases.jsonl).
GO_PHASE = $(PHASE_START) set -o pipefail; cd engine && \
	  pkgs="$$(go list ./... | grep -v -e '/cmd/wirelab-engine$$' -e '/internal/rt$$') $$(go list ./cmd/wirelab-engine ./internal/rt)" && \
	  $(ISOLATE) go test $(GOTEST_FLAGS) -json -skip '^TestH2Spec$$' $$pkgs | \
	  $(TIMES_PY) ../scripts/test_times.py go ../$(TIMES)/go.jsonl; $(call PHASE_END,go,$(1))
RACE_PHASE = $(PHASE_START) pkgs=$$(scripts/race-packages.sh) && cd engine && \
	  { go test $(GOTEST_FLAGS) -p 2 -race -short -exec /bin/true $$pkgs >/dev/null 2>&1; \
	    $(ISOLATE) go test $(GOTEST_FLAGS) -race -short $$pkgs; }; $(call PHASE_END,go-race,$(1))
H2SPEC_PHASE = $(PHASE_START) cd engine && out=$$($(ISOLATE) go test $(GOTEST_FLAGS) -run '^TestH2Spec$$' -v ./server 2>&1); \
	  $(call PHASE_RECORD,h2spec,$(1)); echo "$$out" | grep -E 'h2spec against|failed:|^(ok|FAIL|---)'; exit $$rc
test-go: $(ENGINE) $(STAMPS)/venv
	@mkdir -p $(TIMES); rm -f $(TIMES)/phases.jsonl
	$(GO_PHASE)
	$(RACE_PHASE)
	@$(H2SPEC_PHASE)

# The tests that need no root run on two workers (pytest-xdist); those that do (namespaces, real-time
# emulators, which must not compete), those that signal their own process and those that hold a
# wall-clock bound or a short deadline (marker `clock`: the phase may run at idle priority, below)
# run after, one at a time. $(1): a command to run the phase under ($(IDLE)); $(2): the phase it runs beside.
PY_PARALLEL_PHASE = $(PHASE_START) WIRELAB_ENGINE=$(CURDIR)/$(ENGINE) $(ISOLATE) $(1) $(PY) -m pytest $(PYTEST_FLAGS) \
	  -m "not root and not serial and not clock" -n 2 --junitxml=$(TIMES)/pytest-parallel.xml tests; \
	  $(call PHASE_END,py-parallel,$(2))
PY_SERIAL_PHASE = $(PHASE_START) WIRELAB_ENGINE=$(CURDIR)/$(ENGINE) $(ISOLATE) $(PY) -m pytest $(PYTEST_FLAGS) \
	  -m "root or serial or clock" --junitxml=$(TIMES)/pytest-serial.xml tests; $(call PHASE_END,py-serial)
test-py: $(STAMPS)/venv $(ENGINE)
	@mkdir -p $(TIMES)
	$(PY_PARALLEL_PHASE)
	$(PY_SERIAL_PHASE)

# make test: two phases at a time, each pair a phase that must have the machine's timing to itself in
# the foreground and phases that hold no timing bound beside it.
# 1. The go phase (its timing-bound tests one at a time: about one core; its last two minutes, the
#    parallel tests of cmd/wirelab-engine, both) with, at idle priority, the parallel Python tests
#    (no bound, no short deadline: marker `clock`) and then the fuzz targets — in the beside cgroup
#    (cpu.idle 1, cpu.rt_runtime_us 0: the engines py-parallel starts stay idle-class too, where
#    chrt --idle alone let them make themselves SCHED_RR), removed when the recipe ends.
# 2. The serial Python tests (namespaces, real-time emulators, signals: mostly waiting, 0.6 of a
#    core) with go-race (one core) and then h2spec (waits on its timeouts) at normal priority: their
#    clocks (go-race's 1 s exchange timeouts and 0.5 s intervals) must not starve; the emulators of
#    the serial tests are real-time anyway. What 1. left running goes on, idle, beside 2.
# Each phase runs in a subshell of its own so that its CPU time is its own (bash's `times`); the
# foreground ones as before (Ctrl-C and the signals the serial tests send work as they did); each
# background pair is a job of its own (set -m: own process group, SIGINT not ignored), killed if the
# recipe ends early, its output printed when it has ended. Once the foreground phases have ended,
# what is left of pair 1 (on a machine others keep busy, an idle group gets next to nothing) runs at
# a normal share (cpu.idle 0: the group weighs as one ordinary task). docs/testing.md has the figures.
SETUP_VENV = flock $(TIMES)/.venv.lock $(MAKE) --no-print-directory $(STAMPS)/venv
TEST_OVERLAPPED = cg=$$(scripts/beside-cgroup.sh create wirelab-test-beside-$$$$); \
	if [ -z "$$cg" ] && [ "$$(id -u)" = 0 ]; then \
	  echo "make test: no cgroup for the phases beside (scripts/beside-cgroup.sh): one after another"; \
	  $(SEQUENTIAL); exit $$?; fi; \
	echo "make test: the venv, lint, py-parallel and go-fuzz beside go in $${cg:-the idle class (not root: no real-time engines)}"; \
	set -m; { [ -z "$$cg" ] || echo $$BASHPID >$$cg/cgroup.procs; $(IDLE) $(SETUP_VENV) && $(IDLE) $(MAKE) --no-print-directory lint; \
	  l=$$?; ( $(call PY_PARALLEL_PHASE,$(IDLE),go) ); p=$$?; \
	  ( $(call FUZZ_PHASE,$(FUZZTIME_BESIDE),$(IDLE),go) ); f=$$?; [ $$l -eq 0 ] && [ $$p -eq 0 ] && [ $$f -eq 0 ]; } \
	  >$(TIMES)/beside-go.log 2>&1 & idle=$$!; set +m; race=; \
	trap 'kill -- -$$idle 2>/dev/null; [ -z "$$race" ] || kill -- -$$race 2>/dev/null; \
	  [ -z "$$cg" ] || scripts/beside-cgroup.sh remove $$cg' EXIT; \
	( $(GO_PHASE) ); rc=$$?; \
	set -m; { ( $(call RACE_PHASE,py-serial) ); r=$$?; ( $(call H2SPEC_PHASE,py-serial) ); h=$$?; \
	  [ $$r -eq 0 ] && [ $$h -eq 0 ]; } >$(TIMES)/beside-serial.log 2>&1 & race=$$!; set +m; \
	$(SETUP_VENV) && ( $(PY_SERIAL_PHASE) ); prc=$$?; [ $$rc -ne 0 ] || rc=$$prc; \
	wait $$race; brc=$$?; echo "--- go-race and h2spec (beside py-serial):"; cat $(TIMES)/beside-serial.log; \
	[ $$rc -ne 0 ] || rc=$$brc; [ -z "$$cg" ] || echo 0 >$$cg/cpu.idle; \
	wait $$idle; brc=$$?; echo "--- the venv, lint, py-parallel and go-fuzz (beside go, idle priority):"; cat $(TIMES)/beside-go.log; \
	[ $$rc -ne 0 ] || rc=$$brc; exit $$rc

# Static checks of both halves: go vet and gofmt; ruff (lint and format) and mypy (the package ships
# py.typed, so its annotations are checked as its users' type checkers read them).
lint: setup
	cd engine && go vet ./...
	@out=$$(cd engine && gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(VENV)/bin/ruff check wirelab tests scripts
	$(VENV)/bin/ruff format --check wirelab tests scripts
	$(VENV)/bin/mypy

# Lighthouse's Speed Index implementation (speedline-core, pinned in scripts/speedline's lock file)
# for `bench visual --speedline` (docs/vitals.md, "How the two compare").
speedline: scripts/speedline/node_modules/.package-lock.json
scripts/speedline/node_modules/.package-lock.json: scripts/speedline/package-lock.json
	cd scripts/speedline && npm ci --no-audit --no-fund

bench: setup build
	$(ENGINE) bench link --quick
	$(ENGINE) bench variability --runs 20
	$(ENGINE) bench loader --quick
	$(ENGINE) bench why --quick
	$(ENGINE) bench servers --quick
	$(MAKE) speedline
	$(ENGINE) bench visual --runs 5 --traces out/bench-visual --speedline scripts/speedline
	$(ENGINE) bench loadgen --server builtin,nginx,apache --parts pages --protocols h1,h1s,h2 --rounds 3
	$(ENGINE) bench loadgen --server nginx --parts vus --vus 100000 --think 30s --ramp 900s --hold 60s
	$(ENGINE) bench loadgen --server nginx --parts vus --protocols h1s --vus 10000 --think 30s --ramp 120s --hold 60s
	cd engine && go test -run '^$$' -bench Loader -benchtime 30x ./client/
	WIRELAB_ENGINE=$(CURDIR)/$(ENGINE) $(PY) scripts/bench_corpus.py
	WIRELAB_ENGINE=$(CURDIR)/$(ENGINE) $(PY) scripts/bench_predict.py
	WIRELAB_ENGINE=$(CURDIR)/$(ENGINE) $(PY) scripts/bench_sweep.py
	WIRELAB_ENGINE=$(CURDIR)/$(ENGINE) $(PY) scripts/bench_sweep.py --cluster
	$(PY) scripts/bench_explain.py

# h2spec against every server under test's h2 and h2c (docs/server.md's table; a few minutes).
conformance: setup build
	cd engine && WIRELAB_CONFORMANCE=1 go test -count=1 -timeout 30m -run '^TestServersConformance$$' -v ./cmd/wirelab-engine 2>&1 | grep -E 'h2spec against|^(ok|FAIL|---)'

demo: setup build
	$(VENV)/bin/wirelab demo

# The BPF programs (engine/tcpplus/**/bpf/*.c) are compiled by bpf2go into .o files and Go
# loaders that are committed, so building and testing need no clang; this regenerates them.
bpf: $(STAMPS)/gomod
	@command -v clang >/dev/null && test -f /usr/include/bpf/bpf_helpers.h || \
	  { echo "make bpf needs clang and libbpf-dev: apt-get install clang libbpf-dev"; exit 1; }
	cd engine && go generate ./tcpplus/...

# The facts the control plane reads from the engine (presets, units, limits, corpus pages). The engine's
# tests fail while the committed file differs from what the engine prints.
facts: $(ENGINE)
	$(ENGINE) facts > wirelab/_engine_facts.json

clean:
	rm -rf bin $(STAMPS)
