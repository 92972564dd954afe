"""Live progress of a run on the terminal (rich): trials done/total, loads, ETA, the configurations
running now, failures — every line cut to the terminal's width, never wrapped. On a non-terminal (CI
logs, pipes, ``make demo``'s log) it prints one line per event instead, whatever its length (no wrap
at 80 columns). :class:`RichLoadProgress` is a load test's: per run its intervals as they arrive."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from wirelab._loadplan import LoadPlan, PlannedLoadtest
from wirelab._loadrunner import LoadObserver, LoadtestOutcome, LoadtestSummary
from wirelab._registry import BUSY_FALLBACK, BUSY_GAUGES
from wirelab._terminal import controls_escaped, shown
from wirelab.runner import Observer, RunSummary, TrialOutcome
from wirelab.spec import Plan, PlannedTrial

__all__ = ["RichLoadProgress", "RichProgress"]


class _LiveBars:
    """What both live displays share: a console (stderr by default), a group of progress bars with the
    display's columns, and while a terminal shows it a live region of the bars and ``_rows()`` below."""

    def __init__(self, console: Console | None, *columns: ProgressColumn):
        self.console = console or Console(stderr=True)
        self.live_mode = self.console.is_terminal
        self.progress = Progress(*columns, console=self.console)
        self._live: Live | None = None

    def _rows(self) -> RenderableType:
        raise NotImplementedError

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(Group(self.progress, self._rows()))

    def _start_live(self) -> None:
        self._live = Live(Group(self.progress, self._rows()), console=self.console, refresh_per_second=4)
        self._live.start()

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


class RichProgress(_LiveBars, Observer):
    """An :class:`~wirelab.runner.Observer` drawing on ``console`` (stderr by default)."""

    def __init__(self, console: Console | None = None):
        super().__init__(
            console,
            TextColumn("{task.description:>6}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("•"),
            TimeElapsedColumn(),
            TextColumn("• ETA"),
            TimeRemainingColumn(),
        )
        self.running: dict[str, tuple[PlannedTrial, int, float]] = {}
        #: trial id → the cluster worker running it
        self.placed: dict[str, str] = {}
        self.failures = 0
        self.load_errors = 0
        self.trials_total = 0
        self.trials_done = 0

    # rendering
    def _rows(self) -> Text:
        """One line per running trial (and the failures), each cut with … to the terminal's width: a
        long configuration never wraps the live display."""
        text = Text(no_wrap=True, overflow="ellipsis")
        for trial, loads, t0 in self.running.values():
            text.append("  ▸ ", style="cyan")
            text.append(controls_escaped(trial.label))
            if trial.id in self.placed:
                text.append(f"  @ {self.placed[trial.id]}", style="cyan")
            text.append(f"  {loads}/{trial.loads} loads, {time.monotonic() - t0:.0f} s\n", style="dim")
        if self.failures or self.load_errors:
            text.append(
                f"  {self.failures} failed trials, {self.load_errors} loads with errors\n", style="red"
            )
        return text

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
            soft_wrap=True,
        )
        self.trial_task = self.progress.add_task("trials", total=len(plan.trials), completed=already_complete)
        self.load_task = self.progress.add_task("loads", total=plan.loads, completed=loads_done)
        if self.live_mode and todo:
            self._start_live()

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
            f"[{self.trials_done}/{self.trials_total}] {outcome.trial.id} "
            + controls_escaped(outcome.trial.label),
            (f"  @ {worker}" if worker else "", "cyan"),
            (
                f"  {outcome.loads} loads, {outcome.seconds:.1f} s" if outcome.status == "complete" else "",
                "dim",
            ),
            (f"  {outcome.error}" if outcome.error and outcome.status == "failed" else "", "red"),
            ("  ⚠ " + ", ".join(outcome.flags) if outcome.flags else "", "yellow"),
        )
        if outcome.status != "complete" or not self.live_mode or outcome.flags:
            self.console.print(line, highlight=False, soft_wrap=not self.live_mode)
        self._refresh()

    def message(self, text: str) -> None:
        self.console.print(f"[yellow]{shown(text)}[/]", highlight=False, soft_wrap=not self.live_mode)

    def sweep_ended(self, summary: RunSummary) -> None:
        if self._live is not None:
            self._live.update(Group(self.progress))
        self._stop_live()


class RichLoadProgress(_LiveBars, LoadObserver):
    """A load test's live display on ``console`` (stderr by default): per run, a bar over its planned
    duration and one row per interval as the engine's progress lines arrive — VUs, pages/s, p90 page
    time, errors, and the server's CPU, memory and busy workers from its samples. On a non-terminal it
    prints each interval as a line instead."""

    #: intervals kept on screen (the latest last)
    ROWS = 12

    def __init__(self, console: Console | None = None):
        super().__init__(
            console,
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:>6.0f}/{task.total:.0f} s"),
            TimeElapsedColumn(),
        )
        self.runs_total = 0
        self.runs_done = 0
        self.run: PlannedLoadtest | None = None
        self.intervals: list[dict[str, Any]] = []
        self.samples: dict[int, dict[str, Any]] = {}
        self.printed: set[int] = set()
        self._task: Any = None

    # rendering
    def _rows(self) -> Table:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for name in ("#", "t s", "VUs", "pages/s", "hits/s", "p90 ms", "errors", "srv CPU", "srv MB", "busy"):
            table.add_column(name, justify="right")
        for line in self.intervals[-self.ROWS :]:
            table.add_row(*self._cells(line))
        return table

    def _cells(self, line: Mapping[str, Any]) -> list[str]:
        sample = self.samples.get(int(line["index"])) or {}
        page = line.get("page_ms") or {}
        errors = sum((line.get("errors") or {}).values())
        gauges = sample.get("gauges") or {}
        impl = ((self.run.spec.get("server") or {}).get("impl", "builtin")) if self.run else "builtin"
        gauge = BUSY_GAUGES.get(impl, BUSY_FALLBACK)[0]
        busy = sample.get("threads") if gauge == BUSY_FALLBACK[0] else gauges.get(gauge)
        measured = bool(sample.get("source"))
        return [
            str(line["index"]),
            f"{line['t_end_s']:.0f}",
            str(line["vus"]),
            f"{line['pages_per_s']:.1f}",
            f"{line['hits_per_s']:.0f}",
            f"{page['p90']:,.0f}" if page.get("p90") is not None else "—",
            f"[red]{errors}[/]" if errors else "0",
            f"{sample['cpu_util']:.2f}" if measured else "—",
            f"{sample['memory_bytes'] / 1e6:,.0f}" if measured else "—",
            "—" if busy is None or not measured else f"{busy:g}",
        ]

    # LoadObserver
    def sweep_started(self, plan: LoadPlan, todo: list[PlannedLoadtest], already_complete: int) -> None:
        self.runs_total = len(plan.runs)
        self.runs_done = already_complete
        self.console.print(
            f"[bold]{shown(plan.name)}[/]: {len(plan.runs)} load-test runs ({', '.join(plan.protocols)}"
            + (f" × {len(plan.runs) // len(plan.protocols)} configurations" if plan.axes else "")
            + f"), {format_seconds(plan.planned_s)} of scenario"
            + (f" ({already_complete} runs already complete)" if already_complete else ""),
            highlight=False,
            soft_wrap=True,
        )

    def run_started(self, run: PlannedLoadtest) -> None:
        self.run = run
        self.intervals = []
        self.samples = {}
        self.printed = set()
        description = f"[{self.runs_done + 1}/{self.runs_total}] {controls_escaped(run.label)}"
        if self._task is not None:
            self.progress.remove_task(self._task)
        self._task = self.progress.add_task(escape(description), total=run.planned_s)
        if self.live_mode:
            self._start_live()
        else:
            self.console.print(f"run {shown(description)} ({run.id})", highlight=False, soft_wrap=True)

    def interval(self, run: PlannedLoadtest, line: Mapping[str, Any]) -> None:
        self.intervals.append(dict(line))
        self.progress.update(self._task, completed=min(float(line["t_end_s"]), run.planned_s))
        self._show(int(line["index"]))

    def server_sample(self, run: PlannedLoadtest, sample: Mapping[str, Any]) -> None:
        self.samples[int(sample["index"])] = dict(sample)
        self._show(int(sample["index"]))

    def _show(self, index: int, *, force: bool = False) -> None:
        """Redraw; off a terminal, print interval ``index`` once its line and its server sample (they
        arrive in either order) are both in, or ``force``."""
        if self.live_mode:
            self._refresh()
            return
        if index in self.printed or (index not in self.samples and not force):
            return
        line = next((x for x in self.intervals if int(x["index"]) == index), None)
        if line is not None:
            self.printed.add(index)
            self._print_line(line)

    def _print_line(self, line: Mapping[str, Any]) -> None:
        cells = self._cells(line)
        self.console.print(
            f"  interval {cells[0]} t={cells[1]} s: {cells[2]} VUs, {cells[3]} pages/s, {cells[4]} hits/s, "
            f"p90 {cells[5]} ms, {cells[6]} errors; server {cells[7]} cores, {cells[8]} MB, busy {cells[9]}",
            highlight=False,
            markup=True,
            soft_wrap=True,
        )

    def run_ended(self, outcome: LoadtestOutcome) -> None:
        if self._live is not None:
            self._refresh()
            self._stop_live()
        else:
            for line in self.intervals:
                self._show(int(line["index"]), force=True)
        if outcome.status == "complete":
            self.runs_done += 1
        style = {"complete": "green", "failed": "red", "interrupted": "yellow"}[outcome.status]
        o = outcome.outcomes
        facts = ""
        if outcome.status == "complete" or outcome.intervals:
            facts = (
                f"  {outcome.intervals} intervals, max {o.get('max_pages_per_s') or 0:.1f} pages/s, "
                f"first error at {_vus(o.get('vus_at_first_error'))}, SLA violated at "
                f"{_vus(o.get('vus_at_first_sla_violation'))}, {outcome.seconds:.0f} s"
            )
        summary_line = Text.assemble(
            (f"{outcome.status:>11} ", style),
            f"[{self.runs_done}/{self.runs_total}] {outcome.run.id} {controls_escaped(outcome.run.label)}",
            (facts, "dim"),
            (f"  {outcome.error}" if outcome.error and outcome.status != "complete" else "", "red"),
            (
                "  thresholds failed: " + "; ".join(outcome.failed_thresholds)
                if outcome.failed_thresholds
                else "",
                "yellow",
            ),
        )
        self.console.print(summary_line, highlight=False, soft_wrap=not self.live_mode)

    def message(self, text: str) -> None:
        self.console.print(f"[yellow]{shown(text)}[/]", highlight=False, soft_wrap=not self.live_mode)

    def sweep_ended(self, summary: LoadtestSummary) -> None:
        self._stop_live()


def _vus(value: Any) -> str:
    return "none" if value is None else f"{value} VUs"


def format_seconds(seconds: float) -> str:
    """``45 s``, ``20 min``, ``1.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
