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
PHASE_START = t0=$$(date +%s.%N); l0=$$(cut -d' ' -f1-3 /proc/loadavg);
# A phase that runs beside another names it as $(2): its wall time is not added to the total.
PHASE_RECORD = rc=$$?; times >$(CURDIR)/$(TIMES)/.times-$(1); $(CURDIR)/$(PY) $(CURDIR)/scripts/test_times.py record \
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

# make test runs the fuzz targets beside the serial Python tests (FUZZ_BESIDE, see test-py).
test: FUZZ_BESIDE := 1
test: setup build lint test-go test-py
	@$(PY) scripts/test_times.py slowest 10 $(TIMES)/phases.jsonl $(TIMES)/go.jsonl $(TIMES)/pytest-parallel.xml \
	  $(TIMES)/pytest-serial.xml

# Every native Go fuzz target of engine/ (parsers, the SPDY session, the link model, the HTTP/2
# observer, page JSON, HAR import, the trial spec decoder, mahimahi traces), each for FUZZTIME:
# a crash fails the target and leaves its input in engine/<package>/testdata/fuzz (scripts/fuzz-short.sh).
FUZZTIME ?= 3s
# Beside the serial Python tests (make test) the fuzzers run at nice 19 and get what those leave, about
# 1.4 of the 2 cores: 4 s each keeps their work (worker-seconds) what 3 s on an idle machine gave.
FUZZTIME_BESIDE ?= 4s
fuzz-short: $(STAMPS)/gomod
	@mkdir -p $(TIMES)
	$(PHASE_START) FUZZTIME=$(FUZZTIME) scripts/fuzz-short.sh; $(call PHASE_END,go-fuzz)

# Every package's tests (-p 1: see GOTEST_FLAGS; inside engine/cmd/wirelab-engine the tests without a
# timing bound run two at a time after the others, parallel_test.go), then, under the race detector
# with -short (the tests that check physical timing bounds or take long skip there: the detector
# slows the code it watches 2–20×, which such bounds would report as the path's), the packages that
# scripts/race-packages.sh names (tests need no root; code or tests concurrent), one at a time:
# -short tests of probe and loadgen still judge real exchanges by the clock (1 s timeouts, 0.5 s
# intervals). Their race binaries are compiled on both cores first (-p 2, run by /bin/true).
# docs/testing.md has the figures behind each choice.
# h2spec (the HTTP/2 conformance suite) runs on its own with -v so that its pass count is printed.
test-go: $(ENGINE) $(STAMPS)/venv
	@mkdir -p $(TIMES); rm -f $(TIMES)/phases.jsonl
	$(PHASE_START) set -o pipefail; cd engine && $(ISOLATE) go test $(GOTEST_FLAGS) -json -skip '^TestH2Spec$$' ./... | \
	  ../$(PY) ../scripts/test_times.py go ../$(TIMES)/go.jsonl; $(call PHASE_END,go)
	$(PHASE_START) pkgs=$$(scripts/race-packages.sh) && cd engine && \
	  { go test $(GOTEST_FLAGS) -p 2 -race -short -exec /bin/true $$pkgs >/dev/null 2>&1; \
	    $(ISOLATE) go test $(GOTEST_FLAGS) -race -short $$pkgs; }; $(call PHASE_END,go-race)
	@$(PHASE_START) cd engine && out=$$($(ISOLATE) go test $(GOTEST_FLAGS) -run '^TestH2Spec$$' -v ./server 2>&1); \
	  $(call PHASE_RECORD,h2spec); echo "$$out" | grep -E 'h2spec against|failed:|^(ok|FAIL|---)'; exit $$rc

# The tests that need no root run on two workers (pytest-xdist); those that do (namespaces, real-time emulators, which must not
# compete) and those that signal their own process run after, one at a time. They leave most of a
# core idle (waiting on emulated round trips, children, signals: 195 s wall for 119 s CPU on CI), so
# under make test (FUZZ_BESIDE) the fuzz targets run beside them at nice 19 — the tests' processes
# take the CPU whenever they want it (the emulators are real-time anyway), and no timing-bound Go test
# runs meanwhile. Each phase runs in a subshell of its own so that its CPU time is its own (the
# serial tests in the foreground, as before: Ctrl-C and the signals they send work as they did); the
# fuzzers are a job of their own (set -m: their own process group, SIGINT not ignored), killed if the
# recipe ends early; their output is printed when both have ended.
SERIAL_PY = WIRELAB_ENGINE=$(CURDIR)/$(ENGINE) $(ISOLATE) $(PY) -m pytest $(PYTEST_FLAGS) -m "root or serial" \
	  --junitxml=$(TIMES)/pytest-serial.xml tests
SERIAL_ALONE = $(PHASE_START) $(SERIAL_PY); $(call PHASE_END,py-serial)
SERIAL_WITH_FUZZ = set -m; ( $(PHASE_START) FUZZTIME=$(FUZZTIME_BESIDE) nice -n 19 scripts/fuzz-short.sh; \
	  $(call PHASE_END,go-fuzz,py-serial) ) >$(TIMES)/fuzz.log 2>&1 & fuzz=$$!; set +m; \
	trap "kill -- -$$fuzz 2>/dev/null" EXIT; \
	( $(SERIAL_ALONE) ); rc=$$?; wait $$fuzz; frc=$$?; echo "--- go-fuzz (beside py-serial):"; \
	cat $(TIMES)/fuzz.log; [ $$rc -ne 0 ] || rc=$$frc; exit $$rc
test-py: $(STAMPS)/venv $(ENGINE)
	@mkdir -p $(TIMES)
	$(PHASE_START) WIRELAB_ENGINE=$(CURDIR)/$(ENGINE) $(ISOLATE) $(PY) -m pytest $(PYTEST_FLAGS) -m "not root and not serial" -n 2 \
	  --junitxml=$(TIMES)/pytest-parallel.xml tests; $(call PHASE_END,py-parallel)
	$(if $(FUZZ_BESIDE),$(SERIAL_WITH_FUZZ),$(SERIAL_ALONE))

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
	$(ENGINE) bench loadgen --parts vus --vus 100000 --think 30s --ramp 600s --hold 60s
	$(ENGINE) bench loadgen --parts vus --protocols h1s --vus 10000 --think 30s --ramp 120s --hold 60s
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
