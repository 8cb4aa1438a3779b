"""CLI progress: bars on stderr when it is a terminal (run under a pseudo-terminal), nothing but JSON when piped,
and the lines per second an import reached, all against the real embedded stores."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from consolidation.cli import main as cli
from consolidation.importing import CHECKED, READ, WRITTEN
from consolidation.remote import RemoteService
from consolidation.terminal import ImportBars, RunBars
from tests.conftest import TOKEN, add_memory

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "memories.jsonl"
ESC = "\x1b"
# Variables that would make rich draw differently from a plain terminal, or not at all.
RICH_OVERRIDES = ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES")


@pytest.fixture
def cli_env(tmp_path) -> dict[str, str]:
    """The environment of a CLI process of its own, with its own embedded stores."""
    env = {key: value for key, value in os.environ.items() if key not in RICH_OVERRIDES}
    env.update({"ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(tmp_path / "cli"), "VECTOR_SIZE": "16", "EMBEDDING_PROVIDER": "hash",
                "TERM": "xterm-256color"})
    return env


@pytest.fixture
def lines_file(tmp_path) -> Path:
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps({"content": f"note {i} on topic {i % 17}"}) + "\n" for i in range(2000)))
    return path


def run_piped(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "consolidation", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    return done, time.monotonic() - started


def run_on_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal, as at a person's terminal, and stdout piped."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "consolidation", *args], cwd=ROOT, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=terminal)
    os.close(terminal)
    shown: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(controller, shown), daemon=True)
    reader.start()
    try:
        stdout, _ = process.communicate(timeout=120)
    finally:
        process.kill()
        reader.join(10)
        os.close(controller)
    return process.returncode, stdout.decode(), b"".join(shown).decode(errors="replace")


def _drain(controller: int, shown: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: every end of the terminal's other side is closed
            return
        if not chunk:
            return
        shown.append(chunk)


# --- piped: only the JSON result, with the rate ---------------------------------------------------------------

def test_piped_commands_print_only_json_and_an_import_its_lines_per_second(cli_env, lines_file):
    done, wall = run_piped(["import", str(lines_file)], cli_env)
    assert done.returncode == 0, done.stderr
    assert ESC not in done.stdout and ESC not in done.stderr
    report = json.loads(done.stdout)
    assert report["lines"] == 2000 and report["created"] == 2000 and report["file"] == str(lines_file)
    assert 0 < report["elapsed_seconds"] <= wall
    assert report["lines_per_second"] > 0
    assert report["lines_per_second"] == pytest.approx(2000 / report["elapsed_seconds"], abs=0.06)
    assert report["lines_per_second"] >= 2000 / wall  # the import is only part of the whole command
    assert "lines/s" in done.stderr and "%" not in done.stderr  # a verdict line, no bar

    done, _ = run_piped(["consolidate", "--task", "decay", "--dry-run"], cli_env)
    assert done.returncode == 0, done.stderr
    assert ESC not in done.stdout and ESC not in done.stderr
    assert json.loads(done.stdout)["result"]["decay"]["memories_processed"] == 2000
    assert "━" not in done.stderr and "memories in" not in done.stderr


def test_an_import_over_url_reports_its_rate_too(cli_env, tmp_path, client, serve, services):
    path = tmp_path / "remote.jsonl"
    path.write_text("\n".join(json.dumps({"content": f"remote memory {i}"}) for i in range(300)))
    result = CliRunner().invoke(cli, ["import", str(path), "--url", serve(client.application)], env=cli_env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["imported"] == 300 and services.stores.graph.count_memories() == 300
    assert report["lines_per_second"] == pytest.approx(300 / report["elapsed_seconds"], abs=0.06)


# --- on a terminal: bars on stderr, the same JSON on stdout ---------------------------------------------------

def test_an_import_on_a_terminal_shows_a_bar_per_stage_with_lines_per_second(cli_env, lines_file):
    status, stdout, shown = run_on_terminal(["import", str(lines_file)], cli_env)
    assert status == 0, shown
    report = json.loads(stdout)
    assert ESC not in stdout and report["created"] == 2000
    assert ESC in shown  # drawn live, not printed as plain lines
    for stage in ("read", "checked", "written"):
        assert any(stage in line and "100%" in line and "2000/2000" in line and "lines/s" in line
                   for line in shown.splitlines()), stage
    assert f"{report['lines_per_second']:,.0f} lines/s" in shown  # the verdict under the bars


def test_consolidate_on_a_terminal_shows_each_task_of_the_run(cli_env):
    assert CliRunner().invoke(cli, ["import", str(SAMPLE)], env=cli_env).exit_code == 0
    status, stdout, shown = run_on_terminal(["consolidate", "--task", "decay", "--dry-run"], cli_env)
    assert status == 0, shown
    result = json.loads(stdout)
    assert ESC not in stdout and result["result"]["decay"]["memories_processed"] == 36
    assert any("decay" in line and "100%" in line and "36 memories in" in line for line in shown.splitlines())
    assert "consolidation decay done" in shown  # log lines still reach the terminal, above the bars


def test_consolidate_over_url_on_a_terminal_follows_the_polled_run(cli_env, client, serve, services):
    for _ in range(3):
        add_memory(services)
    status, stdout, shown = run_on_terminal(["consolidate", "--task", "decay", "--url", serve(client.application)],
                                            cli_env)
    assert status == 0, shown
    run = json.loads(stdout)
    assert run["state"] == "succeeded" and run["result"]["decay"]["memories_processed"] == 3
    assert any("decay" in line and "100%" in line and "3 memories in" in line for line in shown.splitlines())


def test_each_command_answers_in_one_shape_here_and_over_url(cli_env, client, serve, services, tmp_path):
    path = tmp_path / "few.jsonl"
    path.write_text("".join(json.dumps({"content": f"note {i}"}) + "\n" for i in range(5)))
    url = serve(client.application)
    for command in (["import", str(path)], ["consolidate", "--task", "decay"], ["consolidate", "--dry-run"]):
        here = CliRunner().invoke(cli, command, env=cli_env)
        there = CliRunner().invoke(cli, [*command, "--url", url], env=cli_env)
        assert here.exit_code == there.exit_code == 0, (here.output, there.output)
        local, remote = json.loads(here.stdout), json.loads(there.stdout)
        assert set(local) == set(remote), (command, set(local) ^ set(remote))
        if command[0] == "consolidate":
            assert local["trigger"] == remote["trigger"] == "cli" and local["state"] == remote["state"] == "succeeded"
            assert set(local["result"]) == set(remote["result"])
            # A one-line verdict on stderr both ways, as an import gives: the run, how it ended, each task.
            for answer, run in ((here, local), (there, remote)):
                verdict = answer.stderr.strip().splitlines()[-1]
                assert verdict.startswith(f"{'dry run' if run['dry_run'] else 'run'} {run['run_id'][:8]} succeeded:")
                assert all(f"{task} ok in " in verdict for task in run["result"]), verdict
        else:
            assert local["created"] == remote["created"] == 5


def test_consolidate_names_all_tasks_apart_from_a_full_pass(cli_env):
    """`--task all` (the default; `full` is AutoMem's word) is which tasks; `--full-pass` is which memories."""
    shown = CliRunner().invoke(cli, ["consolidate", "--help"], env=cli_env).output
    assert "[default: all]" in shown and "which memories: that is --full-pass" in " ".join(shown.split())
    runs = [json.loads(CliRunner().invoke(cli, ["consolidate", *task, "--dry-run"], env=cli_env).stdout)
            for task in (["--task", "all"], ["--task", "full"], [])]
    assert all(run["tasks"] == ["decay", "dedup", "creative", "cluster", "forget"] for run in runs)
    assert {run["full"] for run in runs} == {True}  # a dry run previews the whole store, whichever word is used


def test_a_refused_import_reports_nothing_written_here_and_over_url(cli_env, client, serve, services, tmp_path):
    path = tmp_path / "bad_end.jsonl"
    repeated = json.dumps({"id": "5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b", "content": "said twice, no time"})
    path.write_text("".join(json.dumps({"content": f"good {i}"}) + "\n" for i in range(30)) + repeated + "\n"
                    + repeated + "\n" + '{"content": ""}\n')
    url = serve(client.application)
    for extra in ([], ["--url", url]):
        done = CliRunner().invoke(cli, ["import", str(path), *extra], env=cli_env)
        report = json.loads(done.stdout)
        assert done.exit_code == 1 and "nothing imported" in done.stderr
        assert (report["created"], report["imported"], report["errors_total"]) == (0, 0, 1), extra
        assert report["errors"][0]["line"] == 33 and report["errors"][0]["field"] == "content"
    assert services.stores.graph.count_memories() == 0


def test_help_answers_without_loading_the_stores(cli_env):
    done, seconds = run_piped(["--help"], cli_env)
    assert done.returncode == 0 and "consolidate" in done.stdout
    loaded = subprocess.run([sys.executable, "-c", "import sys; from consolidation.cli import main; "
                             "print(sorted(m for m in ('numpy', 'pydantic', 'redis', 'rich') if m in sys.modules))"],
                            cwd=ROOT, env=cli_env, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"  # what makes a start slow is loaded by the command that needs it
    version, _ = run_piped(["--version"], cli_env)
    assert version.stdout.strip().endswith(__import__("consolidation").__version__)


# --- the progress an import reports, local and over HTTP ------------------------------------------------------

def recorder() -> tuple[list[tuple[str, int, int]], Callable[[str, int, int], None]]:
    calls: list[tuple[str, int, int]] = []
    return calls, lambda stage, done, total: calls.append((stage, done, total))


def assert_stages(calls: list[tuple[str, int, int]], stages: list[str], totals: dict[str, int]) -> None:
    """Each stage in order, counting up from 0 to its total and never past it."""
    assert [stage for index, (stage, _, _) in enumerate(calls) if index == 0 or calls[index - 1][0] != stage] == stages
    for stage in stages:
        done = [d for s, d, total in calls if s == stage and total == totals[stage]]
        assert len(done) == len([c for c in calls if c[0] == stage])  # one total throughout the stage
        assert done[0] == 0 and done[-1] == totals[stage] and done == sorted(done)


def test_a_local_import_reports_reading_checking_and_writing(services):
    text = "".join(json.dumps({"content": f"local memory {i}"}) + "\n" for i in range(2500))
    calls, progress = recorder()
    report = services.memories.import_jsonl(text.encode(), progress=progress)
    assert report.created == 2500
    assert_stages(calls, [READ, CHECKED, WRITTEN], {READ: 2500, CHECKED: 2500, WRITTEN: 2500})
    assert len([c for c in calls if c[0] == READ]) >= 4  # moved during the stage, not only at its ends


def test_a_dry_run_or_refused_import_never_reports_writing(services):
    calls, progress = recorder()
    services.memories.import_jsonl(b'{"content": "a"}\n{"content": "b"}\n', dry_run=True, progress=progress)
    assert_stages(calls, [READ, CHECKED], {READ: 2, CHECKED: 2})
    calls.clear()
    services.memories.import_jsonl(b'{"content": "a"}\nnot json\n', progress=progress)
    assert_stages(calls, [READ, CHECKED], {READ: 2, CHECKED: 1})
    assert services.stores.graph.count_memories() == 0


def test_an_import_over_http_reports_checked_then_written_chunks(client, serve, services):
    text = "\n\n".join(json.dumps({"content": f"chunked memory {i}"}) for i in range(2500))  # blank lines between
    calls, progress = recorder()
    remote = RemoteService(serve(client.application), TOKEN)
    try:
        report = remote.import_jsonl(text.encode(), shift_to_now=False, overwrite=False, dry_run=False,
                                     progress=progress)
    finally:
        remote.close()
    assert report["imported"] == 2500
    assert_stages(calls, [CHECKED, WRITTEN], {CHECKED: 2500, WRITTEN: 2500})
    assert [d for s, d, _ in calls if s == WRITTEN][1:-1]  # a step per chunk between 0 and the end


# --- what the run's bars say, drawn into a string ---------------------------------------------------------------

def drawn(bars: RunBars | ImportBars) -> str:
    out = io.StringIO()
    Console(file=out, width=140, color_system=None).print(bars.progress.get_renderable())
    return out.getvalue()


def test_run_bars_show_done_running_and_failed_tasks_from_the_run_record():
    bars = RunBars(True, ["decay", "dedup", "cluster"])
    bars.show({"tasks": ["decay", "dedup", "cluster"], "current_task": "dedup",
               "progress": {"task": "dedup", "processed": 250, "total": 1000}})
    lines = drawn(bars).splitlines()
    assert any("decay" in line and "done" in line and "100%" in line for line in lines)
    assert any("dedup" in line and "250/1,000 memories" in line and "25%" in line for line in lines)
    assert not any("cluster" in line for line in lines)  # not started yet
    bars.show({"tasks": ["decay", "dedup", "cluster"], "state": "failed", "result": {
        "decay": {"success": True, "memories_processed": 1000, "seconds": 0.5},
        "dedup": {"success": False, "error": "KeyError: ['x']"},
        "cluster": {"success": True, "memories_processed": 7, "seconds": 0.25}}})
    lines = drawn(bars).splitlines()
    assert any("decay" in line and "1,000 memories in 0.50 s" in line for line in lines)
    assert any("dedup" in line and "failed: KeyError: ['x']" in line for line in lines)
    assert any("cluster" in line and "7 memories in 0.25 s" in line for line in lines)


def test_import_bars_draw_a_row_per_stage_that_has_lines_to_do():
    bars = ImportBars(True)
    bars(READ, 0, 40)
    bars(READ, 40, 40)
    bars(CHECKED, 0, 40)
    bars(CHECKED, 10, 40)
    bars(WRITTEN, 0, 0)  # every line already stored
    lines = drawn(bars).splitlines()
    assert any("read" in line and "100%" in line and "40/40" in line and "lines/s" in line for line in lines)
    assert any("checked" in line and "25%" in line and "10/40" in line for line in lines)
    assert not any("written" in line for line in lines)


def test_disabled_bars_draw_nothing_and_take_every_call(capsys):
    with ImportBars(False) as importing, RunBars(False, ["decay"]) as running:
        importing(READ, 5, 10)
        running.show({"tasks": ["decay"], "current_task": "decay"})
    assert importing.progress is None and running.progress is None
    assert capsys.readouterr() == ("", "")


def test_consolidate_over_url_follows_a_queued_run_until_it_ends(monkeypatch):
    """A run waiting for a busy worker is `queued` before `running`: the CLI keeps polling through both (it used
    to return the queued record at once). The service's answers are scripted: a worker that is busy elsewhere."""
    answers = iter([{"status_url": "/consolidate/runs/r1"}, {"state": "queued"}, {"state": "queued"},
                    {"state": "running"}, {"state": "succeeded", "result": {}}])
    remote = RemoteService("http://127.0.0.1:9", TOKEN)
    monkeypatch.setattr(remote, "_json", lambda method, path, **kwargs: next(answers))
    monkeypatch.setattr("consolidation.remote.POLL_SECONDS", 0)
    followed = []
    assert remote.consolidate(None, False, followed.append)["state"] == "succeeded"
    assert [run["state"] for run in followed] == ["queued", "queued", "running"]
