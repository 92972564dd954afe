"""Test double of the engine: :class:`FixtureEngine` replays recorded trial directories.

It implements :class:`wirelab.Engine` without root, namespaces or the Go binary, so the
runner, the store and the CLI are tested alone (like ``httpx.MockTransport`` or wireguard-go's
``tuntest``). It is never chosen implicitly: only code that constructs it uses it.

Recorded trials ship with the package in ``wirelab/_fixtures/trials/<name>/`` (``trial.json``,
``loads.jsonl``, ``har/``), so the double works from an installed wirelab too. For a trial spec, the
double picks the recording of the same ``page`` and replays, for every protocol × repetition in the
spec's order, a recorded load of that protocol (cycling through the recorded repetitions), rewritten
with the spec's trial id, index, repetition and the current time; numbers are replayed as recorded,
whatever the spec's network. It writes the trial directory exactly as the contract says
(``loads.jsonl`` line by line, ``har/``, ``trial.json`` last and atomically) and reports progress
events like ``--progress``.

Hooks let tests steer a run: ``lateness_p99_us`` (emulator lateness to report), ``fail`` (end a trial
like a crashed engine) and ``hold`` (called with the number of loads written so far: once with 0 after
``ready``, then after each load is written; may block, e.g. until
:attr:`FixtureTrialRun.stopping` is set, to simulate a trial in flight).

Load tests (``start_loadtest``) replay ``wirelab/_fixtures/loadtests/<name>/`` (directories written by
``wirelab-engine loadtest``): by default the recording named ``<server.impl>-<protocol>``, or the one
the ``loadtest_recording`` hook names for a spec. Interval lines and server samples are written and
announced one by one (``hold`` is called after each with the number written), then ``loadtest.json``
with the spec given, its recorded outcomes and thresholds (exit 1 when they failed, as the engine);
``interrupt`` stops after the current interval and writes ``loadtest.json`` with ``interrupted`` true
(exit 130); ``fail`` ends the run after ``after_loads`` intervals without ``loadtest.json``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wirelab import _contract as contract
from wirelab import _facts
from wirelab import _netprofile as netprofile
from wirelab._contract import validate
from wirelab._engine import SPEC_FILE, Engine, EventCallback, TrialEvent, TrialRun
from wirelab.errors import ContractError, EngineError, SpecError, UsageError

__all__ = ["FIXTURES_DIR", "FixtureEngine", "FixtureFailure", "FixtureLoadtestRun", "FixtureTrialRun"]

#: The recordings that ship with the package (``trials/``: recorded trial directories; ``pages/``: what
#: ``wirelab-engine pages show`` printed for their pages).
FIXTURES_DIR = Path(__file__).resolve().parent / "_fixtures"


@dataclasses.dataclass(frozen=True)
class FixtureFailure:
    """End a trial like an engine that failed: after ``after_loads`` loads, exit ``returncode``."""

    after_loads: int = 0
    returncode: int = 1
    stderr: str = "wirelab-engine: trial: server s1 did not start: listen tcp 10.77.1.1:443: address in use"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class FixtureTrialRun(TrialRun):
    """A replay in a thread; ``stopping`` is set by :meth:`interrupt` and :meth:`kill`."""

    def __init__(self, engine: FixtureEngine, spec: dict[str, Any], out_dir: Path, on_event: EventCallback):
        self.trial_id = spec.get("trial_id") or "fixture"
        self.out_dir = out_dir
        self.spec = spec
        self.stopping = threading.Event()
        self._engine = engine
        self._on_event = on_event
        self._stop_code: int | None = None
        self._returncode: int | None = None
        self._exited = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True, name=f"fixture-{self.trial_id}")
        self._thread.start()

    # TrialRun
    def poll(self) -> int | None:
        return self._returncode if self._exited.is_set() else None

    def interrupt(self) -> None:
        if self._stop_code is None:
            self._stop_code = 130
        self.stopping.set()

    def kill(self) -> None:
        self._stop_code = -9
        self.stopping.set()

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._exited.wait(timeout):
            return None
        return self._returncode

    # replay
    def _emit(self, kind: str, **data: Any) -> None:
        self._on_event(TrialEvent(self.trial_id, kind, {"event": kind, **data}))

    def _exit(self, code: int, stderr: str = "") -> None:
        if stderr:
            (self.out_dir / "engine.stderr").write_text(stderr + "\n")
        self._returncode = code
        self._exited.set()
        self._on_event(TrialEvent(self.trial_id, "exit", returncode=code, stderr_tail=stderr))

    def _main(self) -> None:
        try:
            code, stderr = self._replay()
        except Exception as e:  # a bug in the double must not hang the runner
            code, stderr = 1, f"FixtureEngine: {e.__class__.__name__}: {e}"
        self._exit(code, stderr)

    def _replay(self) -> tuple[int, str]:
        spec = self.spec
        refusal = self._engine.refusal(spec)
        if refusal is not None:
            return 2, f"wirelab-engine: {refusal}"
        recording = self._engine.recording(spec["page"])
        assert recording is not None
        recorded_loads = [
            json.loads(line) for line in (recording / "loads.jsonl").read_text().splitlines() if line
        ]
        by_protocol: dict[str, list[dict[str, Any]]] = {}
        for rec in recorded_loads:
            by_protocol.setdefault(rec["protocol"], []).append(rec)
        missing = [p for p in spec["protocols"] if p not in by_protocol]
        if missing:
            return (
                2,
                f"wirelab-engine: protocols: the recording of {spec['page']} has no "
                f"{', '.join(missing)} loads",
            )

        sequence = [(p, r) for r in range(spec["repetitions"]) for p in spec["protocols"]]
        if spec.get("order") == "random":
            random.Random(spec.get("seed", 1)).shuffle(sequence)
        started_at = _now()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if spec.get("capture", {}).get("har", True):
            (self.out_dir / "har").mkdir(exist_ok=True)
        (self.out_dir / "engine.log").write_text(
            f"# FixtureEngine replaying {recording} (wirelab.testing; not a measurement)\n"
            f"# trial {self.trial_id}: page={spec['page']} protocols={','.join(spec['protocols'])} "
            f"repetitions={spec['repetitions']} network={spec.get('network', 'native')}\n"
        )
        self._emit("ready")
        if self._engine.hold:
            self._engine.hold(self, 0)
        failure = self._engine.fail(spec) if self._engine.fail else None
        errors = 0
        with open(self.out_dir / "loads.jsonl", "a") as out:
            for index, (protocol, repetition) in enumerate(sequence):
                if failure is not None and index == failure.after_loads:
                    return failure.returncode, failure.stderr
                if self.stopping.is_set():
                    return self._stop_code or 130, "wirelab-engine: interrupted; topology removed"
                template = by_protocol[protocol][repetition % len(by_protocol[protocol])]
                record = dict(template)
                record.update(trial_id=self.trial_id, index=index, repetition=repetition, started_at=_now())
                if spec.get("capture", {}).get("har", True) and template.get("har"):
                    har = f"har/{index}-{protocol}-{repetition}.har"
                    shutil.copyfile(recording / template["har"], self.out_dir / har)
                    record["har"] = har
                else:
                    record["har"] = None
                errors += record.get("error") is not None
                out.write(json.dumps(record) + "\n")
                out.flush()
                self._emit(
                    "load",
                    index=index,
                    protocol=protocol,
                    repetition=repetition,
                    plt_ms=record["plt_ms"],
                    error=record["error"],
                )
                if self._engine.hold:
                    self._engine.hold(self, index + 1)
        if failure is not None and failure.after_loads >= len(sequence):
            return failure.returncode, failure.stderr
        if self.stopping.is_set():
            return self._stop_code or 130, "wirelab-engine: interrupted; topology removed"

        recorded = json.loads((recording / "trial.json").read_text())
        emulator = json.loads(json.dumps(recorded["emulator"]))
        if self._engine.lateness_p99_us is not None:
            p99 = float(self._engine.lateness_p99_us(spec))
            emulator["lateness_us"]["p99"] = p99
            emulator["lateness_us"]["max"] = max(p99, emulator["lateness_us"]["max"])
            emulator["lateness_us"]["p50"] = min(emulator["lateness_us"]["p50"], p99)
        resolved = dict(spec)
        resolved["network_resolved"] = netprofile.parse(spec.get("network", "native"))
        provenance = dict(recorded["provenance"])
        provenance.update(
            engine_version=f"fixture (recorded with {recorded['provenance']['engine_version']})",
            started_at=started_at,
            ended_at=_now(),
            command=[
                "FixtureEngine",
                "trial",
                "--spec",
                str(self.out_dir / SPEC_FILE),
                "--out",
                str(self.out_dir),
            ],
        )
        trial = {
            "contract": 1,
            "spec": resolved,
            "provenance": provenance,
            "emulator": emulator,
            "loads": len(sequence),
            "errors": errors,
        }
        if "egress" in recorded:  # a live trial's egress router, as recorded
            trial["egress"] = recorded["egress"]
        tmp = self.out_dir / "trial.json.tmp"
        tmp.write_text(json.dumps(trial, indent=1) + "\n")
        os.replace(tmp, self.out_dir / "trial.json")
        self._emit("done")
        return 0, ""


class FixtureLoadtestRun(FixtureTrialRun):
    """A load test's replay (see the module docstring); ``trial_id`` is the spec's ``loadtest_id``."""

    def __init__(self, engine: FixtureEngine, spec: dict[str, Any], out_dir: Path, on_event: EventCallback):
        spec = {**spec, "trial_id": spec["loadtest_id"]}
        super().__init__(engine, spec, out_dir, on_event)

    def _replay(self) -> tuple[int, str]:
        spec = {k: v for k, v in self.spec.items() if k != "trial_id"}
        refusal = self._engine.loadtest_refusal(spec)
        if refusal is not None:
            return 2, f"wirelab-engine: {refusal}"
        recording = self._engine.loadtest_recording_dir(spec)
        assert recording is not None
        intervals = (recording / "intervals.jsonl").read_text().splitlines()
        samples = (recording / "server.jsonl").read_text().splitlines()
        recorded = json.loads((recording / "loadtest.json").read_text())
        failure = self._engine.fail(spec) if self._engine.fail else None
        (self.out_dir / "engine.log").write_text(
            f"# FixtureEngine replaying {recording} (wirelab.testing; not a measurement)\n"
            f"# loadtest {spec['loadtest_id']}: page={spec.get('page')} protocol={spec['protocol']}\n"
        )
        self._emit("ready")
        if self._engine.hold:
            self._engine.hold(self, 0)
        written = 0
        with (
            open(self.out_dir / "intervals.jsonl", "w") as out_intervals,
            open(self.out_dir / "server.jsonl", "w") as out_samples,
        ):
            for line, sample in zip(intervals, samples, strict=False):
                if failure is not None and written == failure.after_loads:
                    return failure.returncode, failure.stderr
                if self.stopping.is_set():
                    break
                out_intervals.write(line + "\n")
                out_intervals.flush()
                out_samples.write(sample + "\n")
                out_samples.flush()
                written += 1
                self._emit("interval", **json.loads(line))
                if self._engine.hold:
                    self._engine.hold(self, written)
        if failure is not None and failure.after_loads >= written:
            return failure.returncode, failure.stderr
        if self._stop_code == -9:
            return -9, ""
        interrupted = self.stopping.is_set() or recorded["interrupted"]
        result = json.loads(json.dumps(recorded))
        result["spec"] = contract.apply_defaults("loadtest-spec", spec)
        result["summary"]["spec"] = result["spec"]
        result["summary"]["loadtest_id"] = spec["loadtest_id"]
        result["summary"]["interrupted"] = interrupted
        result["summary"]["intervals"] = written
        result["interrupted"] = interrupted
        result["intervals"] = result["server_samples"] = written
        provenance = result["provenance"]
        provenance.update(
            engine_version=f"fixture (recorded with {provenance['engine_version']})",
            command=["FixtureEngine", "loadtest", "--spec", str(self.out_dir / SPEC_FILE)],
        )
        tmp = self.out_dir / "loadtest.json.tmp"
        tmp.write_text(json.dumps(result, indent=1) + "\n")
        os.replace(tmp, self.out_dir / "loadtest.json")
        self._emit("done")
        if interrupted:
            return (
                130,
                f"wirelab-engine: loadtest {spec['loadtest_id']} interrupted; what was measured is kept",
            )
        if not result["thresholds_passed"]:
            failed = [t["expr"] for t in result["thresholds"] if not t["pass"]]
            return (
                1,
                f"wirelab-engine: loadtest {spec['loadtest_id']}: thresholds failed: {'; '.join(failed)}",
            )
        return 0, ""


class FixtureEngine(Engine):
    """Replays recorded trials (see the module docstring). ``started`` lists trial ids in start order."""

    name = "FixtureEngine"

    def __init__(
        self,
        fixtures: str | os.PathLike[str] = FIXTURES_DIR,
        *,
        lateness_p99_us: Callable[[dict[str, Any]], float] | None = None,
        fail: Callable[[dict[str, Any]], FixtureFailure | None] | None = None,
        hold: Callable[[FixtureTrialRun, int], None] | None = None,
        loadtest_recording: Callable[[dict[str, Any]], str | None] | None = None,
        commands: Sequence[str] = ("trial", "loadtest", "pages", "gc", "version"),
    ):
        self.fixtures = Path(fixtures)
        self.lateness_p99_us = lateness_p99_us
        self.fail = fail
        self.hold = hold
        self.loadtest_recording = loadtest_recording
        self._commands = set(commands)
        self.started: list[str] = []
        self.runs: list[FixtureTrialRun] = []
        #: the number of specs of each check_trials call
        self.checked: list[int] = []

    def recording(self, page: str) -> Path | None:
        """The recorded trial directory for ``page``."""
        for trial_json in sorted((self.fixtures / "trials").glob("*/trial.json")):
            if json.loads(trial_json.read_text())["spec"]["page"] == page:
                return trial_json.parent
        return None

    def refusal(self, spec: Mapping[str, Any]) -> str | None:
        """Why this double refuses ``spec`` (one line naming the field), or None: the contract's
        schema, and a page it has a recording of. Both ``check_trials`` and a trial use it."""
        try:
            validate("trial-spec", dict(spec), what="spec")
        except ContractError as e:
            return str(e)
        if self.recording(spec["page"]) is None:
            return f"page: {spec['page']!r} has no recording in {self.fixtures}"
        return None

    def check_trials(self, specs: Sequence[Mapping[str, Any]]) -> None:
        self._check("trial", specs, self.refusal)

    def loadtest_recording_dir(self, spec: Mapping[str, Any]) -> Path | None:
        """The recorded load-test directory replayed for ``spec``."""
        impl = (spec.get("server") or {}).get("impl", "builtin")
        name = (
            self.loadtest_recording(dict(spec)) if self.loadtest_recording else f"{impl}-{spec['protocol']}"
        )
        path = self.fixtures / "loadtests" / str(name)
        return path if (path / "loadtest.json").is_file() else None

    def loadtest_refusal(self, spec: Mapping[str, Any]) -> str | None:
        """Why this double refuses a loadtest spec: the schema's first problem, a missing page, or no
        recording to replay."""
        found = contract.problem("loadtest-spec", dict(spec))
        if found is not None:
            value = "" if found.value is contract.MISSING else f"got {contract.show(found.value)}; "
            return f"{found.field}: {value}{found.allowed}"
        if "page" not in spec:
            return "page: required: the page the load test's server serves"
        if self.loadtest_recording_dir(spec) is None:
            return f"protocol: no load-test recording in {self.fixtures / 'loadtests'} for this spec"
        return None

    def check_loadtests(self, specs: Sequence[Mapping[str, Any]]) -> None:
        self._check("loadtest", specs, self.loadtest_refusal)

    def _check(
        self,
        command: str,
        specs: Sequence[Mapping[str, Any]],
        refusal_of: Callable[[Mapping[str, Any]], str | None],
    ) -> None:
        """``COMMAND --check`` of ``specs``: the first spec with a refusal raises it as the engine's
        SpecError would (its field, its index in ``specs``)."""
        self.require(command)
        self.checked.append(len(specs))
        for i, spec in enumerate(specs):
            refusal = refusal_of(spec)
            if refusal is not None:
                error = SpecError(refusal, path=refusal.split(":", 1)[0])
                error.index = i  # type: ignore[attr-defined]
                raise error

    def start_loadtest(
        self, spec: dict[str, Any], out_dir: Path, on_event: EventCallback, *, generators: int = 1
    ) -> TrialRun:
        if generators > 1:
            raise EngineError(
                "the fixture engine replays recordings of one generator; --generators needs the real engine"
            )
        self.require("loadtest")
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / SPEC_FILE).write_text(json.dumps(spec, indent=1) + "\n")
        self.started.append(spec["loadtest_id"])
        run = FixtureLoadtestRun(self, spec, out_dir, on_event)
        self.runs.append(run)
        return run

    def version(self) -> str:
        return "fixture (wirelab/_fixtures)"

    def commands(self) -> set[str]:
        return set(self._commands)

    def start_trial(self, spec: dict[str, Any], out_dir: Path, on_event: EventCallback) -> TrialRun:
        self.require("trial")
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / SPEC_FILE).write_text(json.dumps(spec, indent=1) + "\n")
        self.started.append(spec.get("trial_id", ""))
        run = FixtureTrialRun(self, spec, out_dir, on_event)
        self.runs.append(run)
        return run

    def pages_ls(self) -> list[dict[str, Any]]:
        self.require("pages")
        corpus: list[dict[str, Any]] = _facts.engine_facts()["pages"]["corpus"]  # the engine's `pages ls`
        return corpus

    def pages_show(self, name: str) -> dict[str, Any]:
        self.require("pages")
        path = self.fixtures / "pages" / f"{name}.json"
        if "/" in name or not path.is_file():
            known = ", ".join(p["name"] for p in self.pages_ls())
            raise UsageError(f"page: {name!r} is not a page; pages: {known}")
        return json.loads(path.read_text())

    def gc(self) -> str:
        self.require("gc")
        return "gc: nothing to remove (FixtureEngine creates no namespaces)"

    def shell_argv(self, args: Sequence[str]) -> list[str]:
        raise EngineError("FixtureEngine cannot run a shell; use the real wirelab-engine")
