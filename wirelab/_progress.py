"""Live progress of a run on the terminal (rich): trials done/total, loads, ETA, the configurations
running now, failures. On a non-terminal (CI logs, pipes) it prints one line per finished trial instead."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from wirelab._terminal import controls_escaped, shown
from wirelab.runner import Observer, RunSummary, TrialOutcome
from wirelab.spec import Plan, PlannedTrial

__all__ = ["RichProgress"]


class RichProgress(Observer):
    """An :class:`~wirelab.runner.Observer` drawing on ``console`` (stderr by default)."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.live_mode = self.console.is_terminal
        self.progress = Progress(
            TextColumn("{task.description:>6}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("•"),
            TimeElapsedColumn(),
            TextColumn("• ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.running: dict[str, tuple[PlannedTrial, int, float]] = {}
        #: trial id → the cluster worker running it
        self.placed: dict[str, str] = {}
        self.failures = 0
        self.load_errors = 0
        self.trials_total = 0
        self.trials_done = 0
        self._live: Live | None = None

    # rendering
    def _status(self) -> Text:
        text = Text()
        for trial, loads, t0 in self.running.values():
            text.append("  ▸ ", style="cyan")
            text.append(trial.label)
            if trial.id in self.placed:
                text.append(f"  @ {self.placed[trial.id]}", style="cyan")
            text.append(f"  {loads}/{trial.loads} loads, {time.monotonic() - t0:.0f} s\n", style="dim")
        if self.failures or self.load_errors:
            text.append(
                f"  {self.failures} failed trials, {self.load_errors} loads with errors\n", style="red"
            )
        return text

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(Group(self.progress, self._status()))

    # Observer
    def sweep_started(
        self, plan: Plan, todo: list[PlannedTrial], already_complete: int, parallel: int
    ) -> None:
        self.trials_total = len(plan.trials)
        self.trials_done = already_complete
        loads_done = sum(t.loads for t in plan.trials) - sum(t.loads for t in todo)
        self.console.print(
            f"[bold]{plan.name}[/]: {len(plan.trials)} trials, {plan.loads} loads"
            + (f" ({already_complete} trials already complete)" if already_complete else "")
            + f", --parallel {parallel}",
            highlight=False,
        )
        self.trial_task = self.progress.add_task("trials", total=len(plan.trials), completed=already_complete)
        self.load_task = self.progress.add_task("loads", total=plan.loads, completed=loads_done)
        if self.live_mode and todo:
            self._live = Live(
                Group(self.progress, self._status()), console=self.console, refresh_per_second=4
            )
            self._live.start()

    def trial_started(self, trial: PlannedTrial) -> None:
        previous = self.running.get(trial.id)
        if previous is not None:  # started again elsewhere (a lost cluster worker): its loads are redone
            self.progress.advance(self.load_task, -previous[1])
        self.running[trial.id] = (trial, 0, time.monotonic())
        self._refresh()

    def trial_placed(self, trial: PlannedTrial, worker: str, attempt: int) -> None:
        # a cluster worker names itself (wirelab worker --name): shown with its control characters escaped
        worker = controls_escaped(worker)
        self.placed[trial.id] = worker if attempt == 1 else f"{worker} (attempt {attempt})"
        self._refresh()

    def load_done(self, trial: PlannedTrial, event: Mapping[str, Any]) -> None:
        entry = self.running.get(trial.id)
        if entry is not None:
            self.running[trial.id] = (entry[0], entry[1] + 1, entry[2])
        if event.get("error"):
            self.load_errors += 1
        self.progress.advance(self.load_task)
        self._refresh()

    def trial_ended(self, outcome: TrialOutcome) -> None:
        entry = self.running.pop(outcome.trial.id, None)
        worker = self.placed.pop(outcome.trial.id, None)
        streamed = entry[1] if entry else 0
        if outcome.status == "complete":
            self.trials_done += 1
            self.progress.advance(self.trial_task)
            # loads the engine did not announce (no --progress lines, or a recovered trial)
            self.progress.advance(self.load_task, max(0, outcome.loads - streamed))
        else:
            self.progress.advance(self.load_task, -streamed)
        if outcome.status == "failed":
            self.failures += 1
        style = {"complete": "green", "failed": "red", "interrupted": "yellow"}[outcome.status]
        line = Text.assemble(
            (f"{outcome.status:>11} ", style),
            f"[{self.trials_done}/{self.trials_total}] {outcome.trial.id} {outcome.trial.label}",
            (f"  @ {worker}" if worker else "", "cyan"),
            (
                f"  {outcome.loads} loads, {outcome.seconds:.1f} s" if outcome.status == "complete" else "",
                "dim",
            ),
            (f"  {outcome.error}" if outcome.error and outcome.status == "failed" else "", "red"),
            ("  ⚠ " + ", ".join(outcome.flags) if outcome.flags else "", "yellow"),
        )
        if outcome.status != "complete" or not self.live_mode or outcome.flags:
            self.console.print(line, highlight=False)
        self._refresh()

    def message(self, text: str) -> None:
        self.console.print(f"[yellow]{shown(text)}[/]", highlight=False)

    def sweep_ended(self, summary: RunSummary) -> None:
        if self._live is not None:
            self._live.update(Group(self.progress))
            self._live.stop()
            self._live = None
