"""Runs a sweep with the FixtureEngine double in a process of its own, so that a test can SIGKILL it.

    python tests/run_harness.py DB SPEC HOLD MARKER

HOLD is "N:LOADS": in the N-th trial started (0-based), once LOADS loads were written (0 = the trial
started, nothing written yet), touch MARKER and block until killed. LOADS = "end" blocks after the
trial's trial.json was written, before the runner learns that the trial ended: the window between a
trial finishing and its loads being stored.
"""

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import wirelab  # noqa: E402
from wirelab.testing import FixtureEngine  # noqa: E402

db, spec, hold, marker = sys.argv[1:5]
number, _, loads = hold.partition(":")
started: list[str] = []
forever = threading.Event()


def block(*args, **kwargs):
    Path(marker).touch()
    forever.wait()


def on_hold(run, written):
    if run.trial_id not in started:
        started.append(run.trial_id)
    if started.index(run.trial_id) != int(number):
        return
    if loads == "end":
        if written == run.spec["repetitions"] * len(run.spec["protocols"]):
            run._exit = block  # trial.json is written next; the exit event never comes
    elif written == int(loads):
        block()


wirelab.run(spec, db=db, engine=FixtureEngine(hold=on_hold), parallel=1)
print("finished without being killed", file=sys.stderr)
sys.exit(3)
