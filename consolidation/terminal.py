"""Progress bars on stderr while the command line imports or consolidates, drawn (with rich) only on a terminal."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, ProgressColumn, SpinnerColumn, Task, TaskProgressColumn, TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

RunState = dict[str, Any]


def on_terminal() -> bool:
    """Bars only when someone watches stderr: piped or redirected, a command prints no bar and no ANSI code."""
    return sys.stderr.isatty()


class _Bars:
    """A live rich display on stderr, or nothing when disabled; log lines print above it while it is shown."""

    def __init__(self, progress: Progress | None):
        self.progress = progress
        self._stderr = sys.stderr
        self._rerouted: list[logging.StreamHandler] = []

    def __enter__(self):
        if self.progress is not None:
            self._stderr = sys.stderr
            self.progress.start()
            # A log handler keeps the stream it was made with; writing straight to the terminal under the live
            # display would tear the bars, so while they are shown it writes through rich's stderr proxy.
            self._rerouted = [handler for handler in logging.getLogger().handlers
                              if isinstance(handler, logging.StreamHandler) and handler.stream is self._stderr]
            for handler in self._rerouted:
                handler.setStream(sys.stderr)
        return self

    def __exit__(self, *exc_info) -> None:
        if self.progress is not None:
            for handler in self._rerouted:
                handler.setStream(self._stderr)
            self.progress.stop()


class ImportBars(_Bars):
    """One row per import stage (read, checked, written): a bar, lines done of all, lines per second.

    Called as the import's progress callback: `bars(stage, lines done, lines in the stage)`.
    """

    def __init__(self, enabled: bool):
        progress = Progress(TextColumn("{task.description:>8}"), BarColumn(), TaskProgressColumn(),
                            MofNCompleteColumn(), LinesPerSecond(), TimeElapsedColumn(),
                            console=Console(stderr=True, soft_wrap=True), redirect_stdout=False) if enabled else None
        super().__init__(progress)
        self._rows: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.progress is None:
            return
        if stage not in self._rows:
            if not total:  # nothing to do in this stage (every line already stored, say): no row at 0/0
                return
            self._rows[stage] = self.progress.add_task(stage, total=total)
        self.progress.update(self._rows[stage], completed=done, total=total)


class LinesPerSecond(ProgressColumn):
    """Lines per second since the stage began: the stage's average, steadier than rich's moving estimate."""

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        if not elapsed or not task.completed:
            return Text("- lines/s", style="progress.data.speed")
        return Text(f"{task.completed / elapsed:,.0f} lines/s", style="progress.data.speed")


class RunBars(_Bars):
    """One row per task of a consolidation run, brought up to date from the run's state at every redraw.

    The state is a run record as GET /consolidate/runs/<id> answers it (tasks, current_task, progress, and
    result once finished): from `state()` when given (a run in this process), else the last one `show` took.
    """

    def __init__(self, enabled: bool, tasks: Sequence[str], state: Callable[[], RunState | None] | None = None):
        self._state = state or (lambda: self._latest)
        self._latest: RunState | None = None
        self._rows: dict[str, Any] = {}
        progress = _PullingProgress(self._pull, SpinnerColumn(finished_text=" "), TextColumn("{task.description:<8}"),
                                    BarColumn(), TaskProgressColumn(), TextColumn("{task.fields[note]}"),
                                    TimeElapsedColumn(), console=Console(stderr=True, soft_wrap=True),
                                    redirect_stdout=False) if enabled else None
        super().__init__(progress)
        if progress is not None:
            # Rows exist from the start, hidden until their task runs: adding one during a redraw would redraw
            # again from inside the redraw.
            self._rows = {name: progress.add_task(name, start=False, total=None, visible=False, note="")
                          for name in tasks}

    def show(self, run: RunState) -> None:
        """Take a newer record of the run for the next redraw."""
        self._latest = run

    def _pull(self) -> None:
        run = self._state()
        if not run:
            return
        tasks = [name for name in run.get("tasks") or [] if name in self._rows]
        results = run.get("result") or {}
        current = run.get("current_task")
        running = tasks.index(current) if current in tasks else -1
        for index, name in enumerate(tasks):
            if name in results:
                self._finished(name, results[name])
            elif index < running:  # ran before the current task; its report comes with the end of the run
                self._finished(name, None)
            elif index == running:
                progress = run.get("progress") or {}
                self._running(name, progress if progress.get("task") == name else {})

    def _running(self, name: str, progress: dict[str, Any]) -> None:
        row = self._rows[name]
        self.progress.start_task(row)
        total, processed = progress.get("total"), progress.get("processed") or 0
        if total:
            self.progress.update(row, total=total, completed=min(processed, total), visible=True,
                                 note=f"{processed:,}/{total:,} memories")
        else:
            self.progress.update(row, visible=True, note="starting")

    def _finished(self, name: str, result: dict[str, Any] | None) -> None:
        row = self._rows[name]
        self.progress.start_task(row)
        if result is None:
            note = "done"
        elif result.get("success"):
            note = f"{result.get('memories_processed') or 0:,} memories in {result.get('seconds') or 0:.2f} s"
        else:
            note = f"[red]failed[/red]: {escape(str(result.get('error', '')))}"
        self.progress.update(row, total=1, completed=1, visible=True, note=note)


class _PullingProgress(Progress):
    """A rich Progress that asks for the latest state just before each redraw (rich's own refresh thread)."""

    def __init__(self, pull: Callable[[], None], *columns: ProgressColumn, **options: Any):
        self._pull_state = pull  # before rich's constructor, which already draws once
        super().__init__(*columns, **options)

    def get_renderables(self):
        self._pull_state()
        yield from super().get_renderables()
