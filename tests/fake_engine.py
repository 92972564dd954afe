"""A stand-in ``wirelab-engine`` executable for tests (no root, no Go): the same command line as the
engine, ``trial`` and ``loadtest`` replayed by wirelab.testing.FixtureEngine, so SubprocessEngine's
process handling (process groups, signals, progress lines, exit codes) is exercised for real.

Steered by environment variables:
  FAKE_ENGINE_COMMANDS       comma-separated commands to advertise
                             (default: trial,loadtest,pages,gc,shell,version,probe,sites)
  FAKE_ENGINE_HOLD           "TRIAL_INDEX:LOADS" — in the trial whose spec has that trial index (from
                             FAKE_ENGINE_ORDER) stop after LOADS loads (a load test: intervals), touch
                             FAKE_ENGINE_MARKER and wait for a signal; LOADS = "end" holds after trial.json
                             (loadtest.json) is written, before exiting
  FAKE_ENGINE_ORDER          file that counts trials started by this test (shared by all processes)
  FAKE_ENGINE_MARKER         file written when a trial holds (the holding process's pid; probe: touched)
  FAKE_ENGINE_IGNORE_SIGINT  "1": ignore SIGINT (to test escalation to SIGKILL)
  FAKE_ENGINE_LATENESS_P99   emulator lateness p99 to report (µs)
  FAKE_ENGINE_PROBE_HOLD     "N": `probe` stops after N records, touches FAKE_ENGINE_MARKER and waits for a
                             signal (then exits 130, as the engine does)
  FAKE_ENGINE_FAIL_IF        a file: while it exists, every trial fails at once (exit 1, its text on stderr)
  FAKE_ENGINE_LOADTEST_RECORDING  the wirelab/_fixtures/loadtests/ recording every load test replays
  FAKE_ENGINE_SIGNALS        a file: `trial`/`loadtest` append "PID SIGNUM" for every SIGINT/SIGTERM taken

`trial` and `loadtest` block SIGINT and SIGTERM in every thread and take them in the main thread with
sigtimedwait(2): a signal the kernel sent stays pending until taken (a Python-level handler depends on
which thread the kernel picks and on the interpreter noticing; a parent-death signal must not be lost).

`thresholds …` runs the real engine's (bin/wirelab-engine): budgets are computed, not recorded.

`probe SITE…` replays tests/fixtures/probes/local.jsonl (recorded with the real engine): each SITE (a URL
or host of the local internet) gets its recorded record, renumbered; any other site is refused with one
line and exit 2 before any record, as the engine refuses a public name. `sites ls --json` prints the
recorded catalog; `sites -- ENGINE probe …` runs that probe.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wirelab.testing import FixtureEngine  # noqa: E402


def _next_trial_number() -> int:
    path = os.environ.get("FAKE_ENGINE_ORDER")
    if not path:
        return 0
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = len(f.read().splitlines())
        f.write(f"{os.getpid()}\n")
        return n


def _mark() -> None:
    """Tell the test that this process holds: its pid, written whole (renamed into place)."""
    marker = Path(os.environ["FAKE_ENGINE_MARKER"])
    tmp = marker.with_name(marker.name + f".{os.getpid()}")
    tmp.write_text(f"{os.getpid()}\n")
    os.replace(tmp, marker)


def _check_loadtest(args: list[str]) -> int:
    """``loadtest --check --spec FILE|-``: FixtureEngine's refusals, one line, exit 2."""
    where = args[args.index("--spec") + 1]
    spec = json.loads(sys.stdin.read() if where == "-" else Path(where).read_text())
    recording = os.environ.get("FAKE_ENGINE_LOADTEST_RECORDING")
    refusal = FixtureEngine(loadtest_recording=(lambda s: recording) if recording else None).loadtest_refusal(
        spec
    )
    if refusal is not None:
        print(f"wirelab-engine: {refusal}", file=sys.stderr)
        return 2
    return 0


def _check(args: list[str]) -> int:
    """``trial --check --specs -|FILE`` or ``--spec FILE``: FixtureEngine's refusals, one line, exit 2."""
    if "--specs" in args:
        where = args[args.index("--specs") + 1]
        text = sys.stdin.read() if where == "-" else Path(where).read_text()
        specs = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        specs = [json.loads(Path(args[args.index("--spec") + 1]).read_text())]
    engine = FixtureEngine()
    for n, spec in enumerate(specs, 1):
        refusal = engine.refusal(spec)
        if refusal is not None:
            print(f"wirelab-engine: spec {n} (trial_id {spec.get('trial_id')!r}): {refusal}", file=sys.stderr)
            return 2
    return 0


def _trial(args: list[str], command: str = "trial") -> int:
    if "--check" in args:
        return _check(args) if command == "trial" else _check_loadtest(args)
    spec_path = Path(args[args.index("--spec") + 1])
    out = Path(args[args.index("--out") + 1])
    progress = "--progress" in args
    spec = json.loads(spec_path.read_text())
    fail = Path(os.environ.get("FAKE_ENGINE_FAIL_IF") or "/nonexistent")
    if fail.is_file():
        print(fail.read_text().strip(), file=sys.stderr)
        return 1
    # before any thread exists, so that every thread inherits the mask (see the module docstring)
    taken = _take_signals()
    number = _next_trial_number()
    hold_at = os.environ.get("FAKE_ENGINE_HOLD", "")
    hold_trial, _, hold_loads = hold_at.partition(":")
    stop = threading.Event()

    def hold(run, loads_written):
        if hold_at and int(hold_trial) == number and hold_loads != "end" and loads_written == int(hold_loads):
            _mark()
            stop.wait()

    lateness = os.environ.get("FAKE_ENGINE_LATENESS_P99")
    recording = os.environ.get("FAKE_ENGINE_LOADTEST_RECORDING")
    engine = FixtureEngine(
        hold=hold,
        lateness_p99_us=(lambda s: float(lateness)) if lateness else None,
        loadtest_recording=(lambda s: recording) if recording else None,
    )
    done = threading.Event()
    code: list[int] = []

    def say(text, stream):
        # like the engine must: when wirelab died, stdout/stderr are broken pipes; keep cleaning up
        with contextlib.suppress(OSError):
            print(text, file=stream, flush=True)

    def on_event(event):
        if event.kind == "exit":
            if event.stderr_tail:
                say(event.stderr_tail, sys.stderr)
            code.append(event.returncode)
            done.set()
        elif progress and event.kind != "log":
            say(json.dumps(event.data), sys.stdout)

    start = engine.start_trial if command == "trial" else engine.start_loadtest
    run = start(spec, out, on_event)

    def wait_for(event: threading.Event) -> None:
        while not event.is_set():
            info = signal.sigtimedwait(taken, 0.05)
            if info is not None:
                _log_signal(info.si_signo)
                run.interrupt()
                stop.set()

    wait_for(done)
    if hold_at and int(hold_trial) == number and hold_loads == "end" and code[0] == 0:
        _mark()
        wait_for(stop)
        return 130
    return code[0]


def _take_signals() -> set[signal.Signals]:
    """Block SIGINT (unless FAKE_ENGINE_IGNORE_SIGINT) and SIGTERM in this thread and every thread it
    starts; the main thread takes them with sigtimedwait (logged to FAKE_ENGINE_SIGNALS)."""
    taken = {signal.SIGTERM}
    if os.environ.get("FAKE_ENGINE_IGNORE_SIGINT") == "1":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    else:
        taken.add(signal.SIGINT)
    signal.pthread_sigmask(signal.SIG_BLOCK, taken)
    return taken


def _log_signal(signum: int) -> None:
    log = os.environ.get("FAKE_ENGINE_SIGNALS")
    if log:
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {signum}\n")


PROBES = Path(__file__).resolve().parent / "fixtures" / "probes"


def _probe(args: list[str]) -> int:
    records = [json.loads(line) for line in (PROBES / "local.jsonl").read_text().splitlines()]
    known = {r["site"]: r for r in records} | {r["host"]: r for r in records}
    sites = args[args.index("--") + 1 :] if "--" in args else [a for a in args if not a.startswith("-")]
    if not sites:
        print("wirelab-engine: sites: none given; give SITE arguments or --list FILE", file=sys.stderr)
        return 2
    for s in sites:
        if s not in known:
            print(
                f"wirelab-engine: probe: {s}: a public name; only *.wirelab.test names of this run are "
                "probed without --allow-internet",
                file=sys.stderr,
            )
            return 2
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    hold = os.environ.get("FAKE_ENGINE_PROBE_HOLD")
    for i, s in enumerate(sites):
        if hold is not None and i == int(hold):
            Path(os.environ["FAKE_ENGINE_MARKER"]).touch()
            while not stop.wait(0.05):  # as in _trial: the handler runs between waits
                pass
        if stop.is_set():
            print("wirelab-engine: probe: interrupted", file=sys.stderr)
            return 130
        print(json.dumps({**known[s], "index": i, "site": s}), flush=True)
    return 0


def _sites(args: list[str]) -> int:
    if args[:2] == ["ls", "--json"]:
        print((PROBES / "sites.json").read_text(), end="")
        return 0
    if "--" in args:
        rest = args[args.index("--") + 1 :]
        if len(rest) >= 2 and rest[1] == "probe":
            return _probe(rest[2:])
    print(
        "wirelab-engine: sites: the fake runs only `sites ls --json` and `sites -- ENGINE probe …`",
        file=sys.stderr,
    )
    return 2


def main(argv: list[str]) -> int:
    commands = os.environ.get(
        "FAKE_ENGINE_COMMANDS", "trial,loadtest,pages,gc,shell,version,probe,sites,thresholds"
    ).split(",")
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: wirelab-engine COMMAND [flags]\n\ncommands:")
        for c in commands:
            print(f"  {c:<10} (fake)")
        return 0 if argv else 2
    command, args = argv[0], argv[1:]
    if command not in commands:
        print(f"wirelab-engine: unknown command {command!r}", file=sys.stderr)
        return 2
    if command == "version":
        print("wirelab-engine 0.0.0-fake (tests/fake_engine.py)")
        return 0
    if command in ("trial", "loadtest"):
        return _trial(args, command)
    if command == "thresholds":  # a computation, not a measurement: the real engine's (bin/, make build)
        from wirelab._paths import repo_engine

        os.execv(repo_engine(), [str(repo_engine()), command, *args])
    if command == "pages":
        engine = FixtureEngine()
        try:
            page = {"corpus": engine.pages_ls()} if args[0] == "ls" else engine.pages_show(args[1])
        except Exception as e:  # the real engine reports bad input as one line, exit 2
            print(f"wirelab-engine: {e}", file=sys.stderr)
            return 2
        print(json.dumps(page))
        return 0
    if command == "gc":
        if "--owner" in args:
            return 0  # -q: nothing to say; the fake creates nothing
        print("gc: removed 0 namespaces")
        return 0
    if command == "shell":
        print(json.dumps({"shell": args}))
        return 3
    if command == "probe":
        return _probe(args)
    if command == "sites":
        return _sites(args)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
