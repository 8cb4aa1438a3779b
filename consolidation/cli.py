"""Command line: serve the API, import memories from JSONL, run consolidation once."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
import httpx

from .errors import ServiceError
from .logs import configure_logging
from .service import build_services
from .settings import TASK_NAMES, Settings, SettingsError, load_settings

IMPORT_CHUNK_LINES = 2000


@click.group()
def main() -> None:
    """The memory consolidation service."""


@main.command()
def serve() -> None:
    """Start the HTTP service under gunicorn with gunicorn.conf.py (host, port, workers from the settings)."""
    _settings()
    root = Path(__file__).resolve().parent.parent
    os.chdir(root)
    os.execvp(sys.executable, [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "app:app"])


@main.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--url", help="Import through a running service at this URL instead of opening the stores.")
@click.option("--if-empty", is_flag=True, help="Only import if the store holds no memories yet.")
@click.option("--shift-to-now", is_flag=True,
              help="Move all times in the file by one offset so the newest one becomes now.")
def import_memories(path: Path, url: str | None, if_empty: bool, shift_to_now: bool) -> None:
    """Import memories from a JSONL file: one JSON object per line (content, type, importance, ..., embedding).

    Every line is checked before anything is written; lines without an id get one derived from the line,
    so importing the same file twice creates no duplicates.
    """
    settings = _settings()
    lines = path.read_text(encoding="utf-8").splitlines()
    if url:
        report = _import_remote(url, lines, settings, shift_to_now)
    else:
        report = _import_local(lines, settings, if_empty, shift_to_now)
    if report.get("skipped"):
        click.echo(f"store already holds {report['skipped']} memories; {path} not imported (--if-empty)")
        return
    for error in report["errors"]:
        click.echo(f"{path}:{error['line']}: {error['field']}: {error['detail']}", err=True)
    if report["errors"]:
        click.echo(f"nothing imported: {len(report['errors'])} invalid line(s)", err=True)
        sys.exit(1)
    click.echo(f"imported {report['imported']} memories from {path}")


@main.command()
@click.option("--task", type=click.Choice([*TASK_NAMES, "full"]), default="full", show_default=True)
@click.option("--dry-run", is_flag=True, help="Compute and report, write nothing.")
def consolidate(task: str, dry_run: bool) -> None:
    """Run consolidation once in this process (the service must not be running on the embedded stores)."""
    settings = _settings()
    configure_logging(settings)
    services = _open(settings)
    try:
        tasks = list(TASK_NAMES) if task == "full" else [task]
        result = services.engine.run(tasks, dry_run=dry_run, trigger="cli")
    finally:
        services.close()
    click.echo(json.dumps(result, indent=2))
    sys.exit(0 if result["success"] else 1)


def _settings() -> Settings:
    try:
        return load_settings()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None


def _open(settings: Settings):
    try:
        return build_services(settings)
    except ServiceError as exc:
        raise click.ClickException(f"{exc.detail} (is the service running? then use --url)") from None


def _import_local(lines: list[str], settings: Settings, if_empty: bool, shift_to_now: bool) -> dict:
    services = _open(settings)
    try:
        services.stores.ensure_ready()
        existing = services.stores.graph.count_memories() if if_empty else 0
        if existing:
            return {"skipped": existing, "imported": 0, "errors": []}
        report = services.memories.import_lines(lines, shift_to_now)
    finally:
        services.close()
    return {"imported": report.imported, "errors": report.errors}


def _import_remote(url: str, lines: list[str], settings: Settings, shift_to_now: bool) -> dict:
    if shift_to_now and len(lines) > IMPORT_CHUNK_LINES:
        raise click.ClickException(f"--shift-to-now with --url takes at most {IMPORT_CHUNK_LINES} lines at once")
    headers = {"Authorization": f"Bearer {settings.admin_api_token.get_secret_value()}",
               "Content-Type": "application/x-ndjson"}
    imported = 0
    for start in range(0, len(lines), IMPORT_CHUNK_LINES):
        chunk = "\n".join(lines[start : start + IMPORT_CHUNK_LINES])
        reply = httpx.post(url.rstrip("/") + "/memory/import", content=chunk.encode(), headers=headers,
                           params={"shift_to_now": "true"} if shift_to_now else None, timeout=300)
        body = reply.json()
        if reply.status_code != 200:
            errors = body.get("errors") or [{"line": 0, "field": body.get("error"), "detail": body.get("detail")}]
            for error in errors:
                error["line"] = error.get("line", 0) + start
            return {"imported": imported, "errors": errors}
        imported += body["imported"]
    return {"imported": imported, "errors": []}
