"""Command line: serve the API, run a worker process, import memories from JSONL, run consolidation once (here or on a
service), move a store to another embedding model, calibrate the dedup judge."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from . import DEFAULT_TASKS, TASK_NAMES, __version__
from .errors import ServiceError
from .reports import task_outcome

# The stores, numpy, pydantic and rich are loaded by the command that needs them: --help and a mistyped
# argument answer at once.
if TYPE_CHECKING:
    from .engine import Run
    from .importing import ImportProgress
    from .registry import GraphServices
    from .remote import RemoteService
    from .service import Services
    from .settings import Settings
    from .terminal import RunState
    from .worker.process import WorkerLinks

# An import that wrote its good lines and left bad ones out (--skip-bad-lines): neither success (0) nor
# refused (1), so that a script can tell.
SKIPPED_EXIT = 3
URL_HELP = "Talk to a running service at this URL instead of opening the stores in this process."
GRAPH_HELP = "The graph to work on (one FALKORDB_GRAPHS serves); default: FALKORDB_GRAPH."


@click.group()
@click.version_option(__version__, prog_name="consolidation")
def main() -> None:
    """The memory consolidation service."""


@main.command()
def serve() -> None:
    """Start the HTTP service under gunicorn (host, port, workers from the settings)."""
    _settings()
    os.execvp(sys.executable, [sys.executable, "-m", "gunicorn", "-c", "python:consolidation.gunicorn_conf",
                               "consolidation.wsgi:app"])


@main.command()
@click.option("--parent-pid", type=int, hidden=True, help="Stop when this process (the server) is gone.")
@click.option("--falkordb-socket", hidden=True, help="The parent's embedded FalkorDB (its Unix socket).")
@click.option("--vectors-socket", type=click.Path(path_type=Path), hidden=True,
              help="The parent's vector server (its key on stdin).")
def worker(parent_pid: int | None, falkordb_socket: str | None, vectors_socket: Path | None) -> None:
    """Consolidate apart from the web server: run the runs asked over HTTP and the schedule, until stopped.

    Beside a service with CONSOLIDATION_WORKER=external (store servers); the service starts its own child
    with CONSOLIDATION_WORKER=child. Any number of workers: each due task still runs once per interval."""
    from .worker.process import WorkerLinks

    settings = _settings()
    authkey = bytes.fromhex(sys.stdin.readline().strip()) if vectors_socket else None
    try:
        _run_worker(settings, parent_pid, WorkerLinks(falkordb_socket, vectors_socket, authkey))
    except ServiceError as exc:
        raise click.ClickException(exc.detail) from None


def _run_worker(settings: Settings, parent_pid: int | None, links: WorkerLinks) -> None:
    """The worker process's main: build its services (attached to the parent's stores when it has links), run
    the loop until SIGTERM / SIGINT or the parent's end."""
    import signal

    from .logs import configure_logging
    from .service import build_services
    from .worker.process import CHILD_NICENESS, Worker

    configure_logging(settings)
    if parent_pid is not None:
        os.nice(CHILD_NICENESS)  # a child: the process serving HTTP beside it goes first
    services = build_services(settings, links=links, worker=True)
    worker = Worker(services.settings, services.graphs, services.scheduler, parent_pid)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: worker.stop())
    try:
        worker.run()
    finally:
        services.close()


@main.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--url", help=URL_HELP)
@click.option("--if-empty", is_flag=True, help="Only import if the store holds no memories yet.")
@click.option("--shift-to-now", is_flag=True,
              help="Move all times in the file by one offset so the newest one becomes now.")
@click.option("--overwrite", is_flag=True,
              help="Replace stored memories that have a line's id (recorded in the audit log).")
@click.option("--dry-run", is_flag=True, help="Check every line and say what would happen; write nothing.")
@click.option("--skip-bad-lines", is_flag=True,
              help="Leave out invalid and conflicting lines (each named on stderr) and import the others; "
                   f"exit status {SKIPPED_EXIT} when any was left out.")
@click.option("--graph", help=GRAPH_HELP)
def import_memories(path: Path, url: str | None, if_empty: bool, shift_to_now: bool, overwrite: bool,
                    dry_run: bool, skip_bad_lines: bool, graph: str | None) -> None:
    """Import memories from a JSONL file: one JSON object per line (content, type, importance, ..., embedding).

    Every line is checked before anything is written, and the file is written whole or not at all (exit
    status 1 if a line is invalid or conflicts), unless --skip-bad-lines. An import creates memories: a line
    whose id is already stored is skipped if it says the same, and is a conflict otherwise (then nothing is
    imported, unless --overwrite). Lines without an id get one derived from the line, so importing the same
    file twice creates nothing the second time.

    The report is printed as JSON (with lines_per_second); on a terminal, bars on stderr show the progress.
    """
    from .terminal import ImportBars, on_terminal

    settings = _settings()
    data = path.read_bytes()
    flags = {"shift_to_now": shift_to_now, "overwrite": overwrite, "dry_run": dry_run,
             "skip_bad_lines": skip_bad_lines}
    with ImportBars(on_terminal()) as bars:
        if url:
            report = _remote_import(_remote(url, settings, graph), data, if_empty, flags, bars)
        else:
            report = _local_import(settings, graph, data, if_empty, flags, bars)
    if report is None:
        click.echo(f"the store already holds memories; {path} not imported (--if-empty)", err=True)
        click.echo(json.dumps({"file": str(path), "imported": 0, "not_imported": "the store already holds memories"},
                              indent=2))
        return
    _print_import(path, report, dry_run)


@main.command()
@click.option("--task", type=click.Choice([*TASK_NAMES, "all", "full"]), default="all", show_default=True,
              help="one task, or all five (decay, dedup, creative, cluster, forget; `full` is AutoMem's word for "
                   "them). Which tasks run, not which memories: that is --full-pass.")
@click.option("--dry-run", is_flag=True, help="Compute and report, write nothing.")
@click.option("--full-pass", is_flag=True,
              help="every task reads every memory, not what changed (or came due) since its last run.")
@click.option("--incremental", is_flag=True,
              help="with --dry-run: preview the next scheduled pass, not the whole store (the default).")
@click.option("--as-of", "as_of", metavar="TIME",
              help="compute the run as of this ISO-8601 time (not later than now): decay, holds, dwell and "
                   "forgetting take it as now, and memories stored after it are not read.")
@click.option("--url", help=URL_HELP)
@click.option("--graph", help=GRAPH_HELP)
def consolidate(task: str, dry_run: bool, full_pass: bool, incremental: bool, as_of: str | None, url: str | None,
                graph: str | None) -> None:
    """Run consolidation once and print its run record as JSON, as GET /consolidate/runs/<id> shows it, here and
    with --url alike (exit status 1 if a task failed). A dry run previews the whole store unless --incremental
    asks for the next scheduled pass.

    On a terminal, a bar per task on stderr follows the run (with --url, as often as the status is polled).
    """
    from .terminal import RunBars, on_terminal

    if incremental and (full_pass or not dry_run or as_of):
        raise click.UsageError("--incremental previews the next pass: give it with --dry-run, without --full-pass "
                               "or --as-of")
    moment = _moment(as_of)
    settings = _settings()
    every = task in ("all", "full")
    tasks = list(DEFAULT_TASKS) if every else [task]
    if url:
        remote = _remote(url, settings, graph)
        try:
            with RunBars(on_terminal(), tasks) as bars:
                run = remote.consolidate(None if every else tasks, dry_run, bars.show, full_pass,
                                         incremental, as_of)
                bars.show(run)
        except ServiceError as exc:
            raise click.ClickException(exc.detail) from None
        finally:
            remote.close()
        _print_run(run)
    from .logs import configure_logging

    configure_logging(settings)
    services = _open(settings)
    try:
        engine = _graph(services, graph).engine
        try:
            begun = engine.begin(tasks, dry_run=dry_run, trigger="cli", full=full_pass, incremental=incremental,
                                 as_of=moment)
        except ServiceError as exc:
            raise click.ClickException(exc.detail) from None
        with RunBars(on_terminal(), tasks, lambda: _state_of(begun)):
            engine.execute(begun)
        run = engine.get_run(begun.id)
    finally:
        services.close()
    _print_run(run)


def _moment(as_of: str | None):
    """--as-of as a time (UTC), or None; a usage error naming the option for anything else."""
    from .timeutil import parse_iso  # numpy behind it: not loaded for --help

    if as_of is None:
        return None
    try:
        return parse_iso(as_of)
    except ValueError:
        raise click.BadParameter("an ISO-8601 time such as 2023-05-08T13:56:00+00:00", param_hint="--as-of") from None


def _print_run(run: dict[str, Any]) -> None:
    """The run record as JSON on stdout, a one-line verdict on stderr for people; exit 1 unless it succeeded."""
    click.echo(json.dumps(run, indent=2))
    click.echo(run_verdict(run), err=True)
    sys.exit(0 if run.get("state") == "succeeded" else 1)


def run_verdict(run: dict[str, Any]) -> str:
    """One line: the run, how it ended, and each task's outcome with its seconds."""
    parts = []
    for task, report in (run.get("result") or {}).items():
        if not isinstance(report, dict):
            continue
        outcome = {"success": "ok", "cancelled": "cancelled"}.get(task_outcome(report),
                                                                  f"failed ({report.get('error')})")
        seconds = f" in {report['seconds']} s" if report.get("seconds") is not None else ""
        parts.append(f"{task} {outcome}{seconds}")
    kind = "dry run" if run.get("dry_run") else "run"
    return f"{kind} {str(run.get('run_id', ''))[:8]} {run.get('state')}: {', '.join(parts) or 'no task ran'}"


@main.command()
@click.option("--dry-run", is_flag=True, help="Count what would be re-embedded, and by which model it was made.")
@click.option("--graph", help=GRAPH_HELP)
def reembed(dry_run: bool, graph: str | None) -> None:
    """Move the store to the configured embedding model: every memory whose vector another model made (or that
    names none) is embedded again from its text. Resumable: after an interruption, run it again to finish. One
    process at a time (it holds the run lease); text recalls and text writes answer 409 until it finishes.

    The report is printed as JSON; progress goes to stderr.
    """
    from .logs import configure_logging

    settings = _settings()
    configure_logging(settings)
    services = _open(settings)
    shown = [0.0]

    def progress(done: int, total: int) -> None:
        if total and (time.monotonic() - shown[0] > 1 or done == total):
            shown[0] = time.monotonic()
            click.echo(f"reembedded {done:,} of {total:,} memories", err=True)

    try:
        report = _graph(services, graph).engine.reembed(dry_run, progress)
    except ServiceError as exc:
        raise click.ClickException(exc.detail) from None
    finally:
        services.close()
    click.echo(json.dumps(report, indent=2))


@main.command()
@click.argument("pairs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--precision", type=click.FloatRange(0.5, 1.0), default=0.97, show_default=True,
              help="The merge precision every set must reach (at an even mix of same and different pairs).")
def calibrate(pairs: Path, precision: float) -> None:
    """Find the dedup judge's thresholds for your embedding model, from labelled pairs.

    PAIRS is a JSONL file, one labelled pair a line: {"a": text, "b": text, "same": true or false (or "label":
    "pos" / "neg"), "a_embedding": [...], "b_embedding": [...]} with the vectors your model gives the two texts,
    and optionally "set": a name (each set must reach the precision on its own). Public labelled pairs (MRPC,
    STS-B) embedded by your model make a good start; pairs from your own memories a better one.

    Prints, as JSON, the settings to use (CONSOLIDATION_DEDUP_SAME_FACT_SIMILARITY and the others) and how they
    and the best plain cosine threshold score on each set.
    """
    from .hygiene.calibration import calibrate_from_lines

    try:
        found = calibrate_from_lines(pairs.read_text().splitlines(), precision)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(found, indent=2))


def _settings() -> Settings:
    from .settings import SettingsError, load_settings

    try:
        return load_settings()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None


def _open(settings: Settings):
    from .service import build_services

    try:
        return build_services(settings)
    except ServiceError as exc:
        raise click.ClickException(f"{exc.detail} (is the service running? then use --url)") from None


def _graph(services: Services, name: str | None,
           writes: Callable[[], bool] | None = None) -> GraphServices | None:
    """The graph --graph names: one that exists, or for a write (`writes`, GraphRegistry.to_write) a new one under
    a prefix, made only if the write will write (None when it will not)."""
    try:
        return services.graphs.to_write(name, writes) if writes else services.graphs.get(name, create=False)
    except ServiceError as exc:
        raise click.ClickException(exc.detail.replace("the X-Graph header", "--graph")) from None


def _remote(url: str, settings: Settings, graph: str | None) -> RemoteService:
    from .remote import RemoteService

    return RemoteService(url, settings.admin_api_token.get_secret_value(), graph)


def _local_import(settings: Settings, graph: str | None, data: bytes, if_empty: bool, flags: dict[str, bool],
                  progress: ImportProgress) -> dict[str, Any] | None:
    from .importing import throughput

    services = _open(settings)
    gate = services.checks.import_gate(data, flags)
    try:
        started = time.monotonic()
        target = _graph(services, graph, gate)
        if target is None:  # a new graph, and the import writes nothing: it is not made
            report = gate.report.public()
            return {**report, **throughput(report["lines"], time.monotonic() - started)}
        target.stores.ensure_ready()
        if if_empty and target.stores.graph.count_memories():
            return None
        report = target.memories.import_jsonl(data, **flags, progress=progress).public()
        return {**report, **throughput(report["lines"], time.monotonic() - started)}
    except ServiceError as exc:
        raise click.ClickException(exc.detail) from None
    finally:
        services.close()


def _remote_import(remote: RemoteService, data: bytes, if_empty: bool, flags: dict[str, bool],
                   progress: ImportProgress) -> dict[str, Any] | None:
    from .importing import throughput

    try:
        if if_empty and remote.memory_count():
            return None
        started = time.monotonic()
        report = remote.import_jsonl(data, **flags, progress=progress)
        return {**report, **throughput(report["lines"], time.monotonic() - started)}
    except ServiceError as exc:
        raise click.ClickException(exc.detail) from None
    finally:
        remote.close()


def _print_import(path: Path, report: dict[str, Any], dry_run: bool) -> None:
    """The report as JSON on stdout; each refused (or skipped) line and a one-line verdict on stderr, for people."""
    skipping = report.get("skip_bad_lines", False)
    mark = "skipped: " if skipping else ""
    for entry in sorted(report["errors"], key=lambda e: e["line"]):
        click.echo(f"{path}:{entry['line']}: {mark}{entry['field']}: {entry['detail']}", err=True)
    for entry in report["conflicts"]:
        click.echo(f"{path}:{entry['line']}: {mark}conflict: memory {entry['id']}: {entry['reason']}", err=True)
    click.echo(json.dumps({"file": str(path), **report}, indent=2))
    counts = (f"created {report['created']}, overwritten {report['overwritten']}, "
              f"skipped {report['skipped']} already stored or repeated")
    if "stopped_at_line" in report:
        click.echo(f"stopped at line {report['stopped_at_line']}: {report['imported']} memories were written "
                   f"before it ({counts}); the rest of {path} was not imported", err=True)
        sys.exit(1)
    bad = _bad_lines(report)
    if bad and not skipping:
        shown, total = len(report["errors"]) + len(report["conflicts"]), report["errors_total"] + report["conflicts_total"]
        listed = f" (the first {shown} listed above)" if shown < total else ""
        click.echo(f"nothing imported: {bad}{listed}; --skip-bad-lines imports the other lines", err=True)
        sys.exit(1)
    verb = "would import" if dry_run else "imported"
    left_out = ""
    if bad:
        skipped = "would skip" if dry_run else "skipped"
        left_out = f"; {skipped} {report['bad_lines_skipped']} bad line(s) ({bad}), listed above"
    click.echo(f"{verb} {report['imported']} memories from {path} ({counts}){left_out}; {report['lines']} lines "
               f"in {report['elapsed_seconds']} s, {report['lines_per_second']:,.0f} lines/s", err=True)
    if bad:
        sys.exit(SKIPPED_EXIT)


def _bad_lines(report: dict[str, Any]) -> str:
    """How many lines were invalid and how many conflicted, in words ("" when none was)."""
    kinds = [f"{report[key]} {name}" for key, name in (("errors_total", "invalid line(s)"),
                                                       ("conflicts_total", "conflict(s)")) if report[key]]
    return ", ".join(kinds)


def _state_of(run: Run) -> RunState:
    """A run of this process in the shape of its record, read by the bars' redraws while the run goes on."""
    return {"tasks": run.tasks, "current_task": run.current_task, "progress": run.progress,
            "result": dict(run.results)}
