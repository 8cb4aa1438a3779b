"""The dashboard in a real browser: Debian's headless Chromium, driven by playwright, against the service on
embedded stores over loopback HTTP. Sign-in (a wrong token refused, where the token is said), finding a memory
first on the page, charts drawn with the stored numbers (distinct time labels, one y-axis each), a dry forget with
each decision's reason, a run's report in words with its raw JSON, a canonical's history naming what merged into
it, and a restore that the API then confirms, at 1400 and 420 px; then recall (current beside history), supersede
and undo, forget, and purge after its dry run, each checked against the API."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
import requests

from consolidation.api import create_app
from consolidation.cadence import due_tasks
from consolidation.service import build_services
from tests.conftest import TOKEN, add_memories, make_settings
from tests.loopback import LoopbackServer
from tests.processes import ROOT

AUTH = {"Authorization": f"Bearer {TOKEN}"}
# The flags Debian's Chromium needs here (root, no GPU, no network beyond loopback).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARCHIVE_BELOW, DELETE_BELOW = 0.2, 0.05
BINS = 10  # what the page asks the histogram route for


def chromium() -> str:
    path = shutil.which("chromium")
    assert path, "Chromium is missing: `make test` installs Debian's chromium package (apt-get install chromium)"
    return path


def memory(content: str, days_old: float, unused_days: float, importance: float, kind: str = "Context",
           now: datetime | None = None) -> dict:
    now = now or datetime.now(UTC)
    return {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, content)), "content": content, "type": kind,
            "importance": importance, "confidence": 0.5,
            "timestamp": (now - timedelta(days=days_old)).isoformat(),
            "last_accessed": (now - timedelta(days=unused_days)).isoformat(), "access_count": 1}


# Relevance = age * access * connections * (0.5 + importance) * (0.7 + 0.3 confidence): 300 days old and unused
# for 250 is about 1e-7 (below DELETE_BELOW); 120 days old and used 20 days ago is about 0.07 (between the two).
def to_delete(content: str, **kw) -> dict:
    return memory(content, 300, 250, 0.4, **kw)


def to_archive(content: str, **kw) -> dict:
    return memory(content, 120, 20, 0.3, **kw)


def first_batch() -> dict[str, list[dict]]:
    """Clusters, and old memories the first real forget archives or deletes."""
    backups = [memory(f"The nightly backup of the analytics warehouse finished in {n} minutes", 3 + i, 1, 0.5)
               for i, n in enumerate((12, 15, 18, 21, 24, 27))]
    invoices = [memory(f"Customer {name} asked for the monthly invoice export as a spreadsheet", 2 + i, 1, 0.6)
                for i, name in enumerate(("Acme", "Globex", "Initech", "Umbrella", "Hooli"))]
    return {
        "clustered": backups + invoices,
        "deleted": [to_delete(f"Temporary note {n}: the VPN certificate rotation reminder") for n in (1, 2, 3)],
        "archived": [to_archive(f"Old standup remark {n}: the office coffee machine was broken") for n in (1, 2)],
    }


def second_batch() -> dict[str, list[dict]]:
    """Old memories a dry forget finds after the real one: one of each decision."""
    return {
        "delete": [to_delete("Scratch note: the printer on floor 3 needed toner")],
        "archive": [to_archive("Passing remark: the parking garage was repainted")],
        "protect_type": [memory("Decided long ago to keep the legacy FTP drop for one partner", 300, 250, 0.4,
                                kind="Decision")],
        "protect_importance": [memory("Old but important: the root CA expires in 2031", 300, 250, 0.9)],
    }


def jsonl(memories: list[dict]) -> bytes:
    return "\n".join(json.dumps(m) for m in memories).encode()


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """The service on its embedded stores, served over loopback, with the scheduler thread alive (its first
    look is an hour away, so only the test starts runs), loaded with data and consolidated a few times."""
    settings = make_settings(tmp_path_factory.mktemp("dashboard") / "data", vector_size=384,
                             consolidation_scheduler_enabled=True, consolidation_tick_seconds=3600.0,
                             consolidation_forget_interval_seconds=604800,
                             consolidation_archive_threshold=ARCHIVE_BELOW,
                             consolidation_delete_threshold=DELETE_BELOW)
    services = build_services(settings)
    server = LoopbackServer(create_app(settings, services=services, start_scheduler=True)).start()
    url = server.url
    first, second = first_batch(), second_batch()

    def call(method: str, path: str, **kw) -> dict:
        answer = requests.request(method, url + path, headers=AUTH, timeout=60, **kw)
        assert answer.status_code == 200, answer.text
        return answer.json()

    call("POST", "/memory/import?shift_to_now=true", data=(ROOT / "samples" / "memories.jsonl").read_bytes())
    call("POST", "/memory/import", data=jsonl([m for group in first.values() for m in group]))
    runs = [call("POST", "/consolidate", json={"task": "decay", "dry_run": True, "wait": True}),
            call("POST", "/consolidate", json={"wait": True}),
            call("POST", "/consolidate", json={"task": "dedup", "dry_run": True, "wait": True})]
    call("POST", "/memory/import", data=jsonl([m for group in second.values() for m in group]))
    runs.append(call("POST", "/consolidate", json={"task": "decay", "wait": True}))
    try:
        yield {"url": url, "services": services, "first": first, "second": second,
               "run_ids": [run["run_id"] for run in runs], "call": call}
    finally:
        server.stop()
        services.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


def stored_histogram(services) -> list[int]:
    """Straight from the graph, without the route: active memories' stored relevance, binned by numpy."""
    rows = services.stores.graph.falkor.records("MATCH (m:Memory) RETURN properties(m)", read_only=True)
    scores = [row[0]["relevance_score"] for row in rows
              if not row[0].get("archived") and row[0].get("type") != "MetaPattern"
              and row[0].get("relevance_score") is not None]
    return np.histogram(scores, bins=BINS, range=(0.0, 1.0))[0].tolist()


def chart_data(page, canvas_id: str) -> dict:
    """What Chart.js holds for a canvas, and how many elements it drew for each dataset."""
    return page.evaluate("""(id) => {
        const chart = Chart.getChart(document.getElementById(id));
        return {labels: chart.data.labels, datasets: chart.data.datasets.map((d, i) => ({
            label: d.label, data: d.data, drawn: chart.getDatasetMeta(i).data.length,
            lengths: chart.getDatasetMeta(i).data.map((bar) => Math.abs(bar.x - bar.base))}))};
    }""", canvas_id)


def epoch_ms(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp() * 1000


CHARTS = ("timeline-chart", "durations-chart", "trend-chart", "decisions-chart")
# 2.2556e-8: how no number may read (a short id such as 6e9a534a is no number).
EXPONENT = re.compile(r"(?<![0-9a-f-])\d+(\.\d+)?e[-+]\d+", re.IGNORECASE)


def charts_read_plainly(page, width: int) -> None:
    """Each chart, drawn at this width: no two of its x-axis labels (nor of its runs') read the same, and it
    has one y-axis, named (no second scale drawn over the first with another meaning)."""
    page.wait_for_function("([ids, width]) => ids.every((id) => Chart.getChart(document.getElementById(id))"
                           ".width <= width)", arg=[list(CHARTS), width])
    for canvas_id in CHARTS:
        drawn = page.evaluate("""(id) => {
            const chart = Chart.getChart(document.getElementById(id));
            const ys = Object.values(chart.scales).filter((scale) => scale.axis === "y");
            return {ticks: chart.scales.x.ticks.map((tick) => tick.label), labels: chart.data.labels || [],
                    ys: ys.map((scale) => scale.options.title.display ? scale.options.title.text : null)};
        }""", canvas_id)
        assert drawn["ticks"] and len(set(map(str, drawn["ticks"]))) == len(drawn["ticks"]), (canvas_id, drawn)
        assert len(set(drawn["labels"])) == len(drawn["labels"]), (canvas_id, drawn["labels"])
        if canvas_id != "timeline-chart":  # the timeline's y-axis is the tasks, named on each row
            assert len(drawn["ys"]) == 1 and drawn["ys"][0], (canvas_id, drawn["ys"])


def top_of(page, selector: str) -> float:
    """Where an element starts on the page (not on the screen), in CSS pixels."""
    return page.evaluate("(s) => document.querySelector(s).getBoundingClientRect().top + window.scrollY", selector)


def finding_comes_first(page, height: int) -> None:
    """Find a memory is the first card, its search box on the first screen, before the run history."""
    assert page.evaluate("document.getElementById('dashboard').firstElementChild.id") == "find-memory"
    box = page.evaluate("(() => { const r = document.getElementById('lookup-id').getBoundingClientRect(); "
                        "return r.top + window.scrollY + r.height; })()")
    assert box <= height and top_of(page, "#find-memory") < top_of(page, "#history")


def clipped_cells(page) -> list[str]:
    """Table cells not wholly inside their card, and cards that scroll sideways: what a reader cannot see."""
    return page.evaluate("""() => [...document.querySelectorAll('#dashboard .card')]
        .filter((card) => card.getClientRects().length).flatMap((card) => {
            const box = card.getBoundingClientRect();
            const cut = [...card.querySelectorAll('td, th')].filter((cell) => cell.getClientRects().length)
                .filter((cell) => { const r = cell.getBoundingClientRect();
                                    return r.left < box.left - 1 || r.right > box.right + 1; })
                .map((cell) => `${card.id}: ${cell.textContent.slice(0, 40)}`);
            return card.scrollWidth > card.clientWidth + 1 ? [`${card.id} scrolls sideways`, ...cut] : cut;
        })""")


def run_detail_in_words(page) -> str:
    """The run opened, as it reads with its raw JSON folded away."""
    return page.evaluate("""() => { const copy = document.getElementById('run-detail').cloneNode(true);
        copy.querySelectorAll('details').forEach((folded) => folded.remove()); return copy.innerText
        || copy.textContent; }""")


def test_the_dashboard_in_a_real_browser(service, browser, request, tmp_path):
    url, services, call = service["url"], service["services"], service["call"]
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(15000)
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    # A refused request is logged by the browser too; those are checked below through `refused`.
    page.on("console", lambda message: problems.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource") else None)
    refused: list[tuple[int, str]] = []
    page.on("response", lambda response: refused.append((response.status, urlsplit(response.url).path))
            if response.status >= 400 else None)
    dialogs: list[str] = []

    def accept(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    page.on("dialog", accept)
    page.goto(f"{url}/dashboard")

    # The sign-in card says where the token is, on a wide screen and a narrow one.
    for width in (1400, 420):
        page.set_viewport_size({"width": width, "height": 900})
        whereabouts = page.inner_text("#sign-in")
        assert "data/admin_token" in whereabouts and "ADMIN_API_TOKEN" in whereabouts and "make run" in whereabouts
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    page.set_viewport_size({"width": 1400, "height": 1000})

    # A wrong token is refused and nothing of the dashboard shows.
    page.fill("#token", "not-the-admin-token-at-all")
    page.click("#sign-in-form button[type=submit]")
    page.wait_for_selector("#sign-in-error:not([hidden])")
    assert "refused" in page.inner_text("#sign-in-error")
    assert page.is_hidden("#dashboard")
    assert page.input_value("#token") == ""  # the page let go of what was typed

    page.fill("#token", TOKEN)
    page.click("#sign-in-form button[type=submit]")
    page.wait_for_selector("body[data-loaded]")
    assert page.is_visible("#dashboard") and page.is_hidden("#sign-in")
    # The token lives in a script variable only: nothing in storage, cookies or the address bar.
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    assert page.context.cookies() == [] and TOKEN not in page.url
    # Which model made the store's vectors, beside the configured one (the same here: no warning).
    models = page.inner_text("#embedding-models")
    assert "store hash" in models and "configured hash" in models and "409" not in models
    finding_comes_first(page, 1000)
    # The restorable card opens on every kind at once (archived, merged, then deleted): never on an empty tab.
    assert page.get_attribute('#restorable-kinds button[aria-selected="true"]', "data-kind") == ""
    restorable = call("GET", "/memories/restorable")
    assert {item["kind"] for item in restorable["items"]} == {"archived", "merged", "deleted"}
    assert page.locator("#restorable-table tbody tr:not(.empty)").count() == min(restorable["total"], 10)
    assert f"of {restorable['total']}" in page.inner_text('.pager[data-for="restorable"]')

    # The relevance histogram holds the stored scores, binned here independently of the route.
    expected = stored_histogram(services)
    relevance = chart_data(page, "relevance-chart")
    assert relevance["datasets"][0]["data"] == expected and sum(expected) > 20
    assert relevance["datasets"][0]["drawn"] == BINS
    shown_counts = [int(row.split("\t")[1].replace(",", "")) for row in
                    page.inner_text("#relevance-table tbody").strip().split("\n")]
    assert shown_counts == expected
    assert page.inner_text("#relevance-summary").startswith(f"{sum(expected)} active memories")

    # Durations and the timeline: one point and one bar per task of each run, with the run's own numbers.
    runs = [call("GET", f"/consolidate/runs/{run_id}") for run_id in service["run_ids"]]
    durations = {d["label"]: d for d in chart_data(page, "durations-chart")["datasets"]}
    expected_points = {}
    for run in runs:
        for task, report in run["result"].items():
            expected_points.setdefault(task, []).append((epoch_ms(run["started_at"]), report["seconds"]))
    assert set(durations) == set(expected_points)
    for task, points in expected_points.items():
        drawn = sorted((point["x"], point["y"]) for point in durations[task]["data"])
        assert [y for _, y in drawn] == [y for _, y in sorted(points)]
        assert all(abs(x - ex) < 1 for (x, _), (ex, _) in zip(drawn, sorted(points)))
        assert durations[task]["drawn"] == len(points)
    timeline = chart_data(page, "timeline-chart")
    assert sum(d["drawn"] for d in timeline["datasets"]) == sum(len(run["result"]) for run in runs)
    # Runs of milliseconds are drawn long enough to see and to point at, not as one-pixel slivers.
    assert min(length for d in timeline["datasets"] for length in d["lengths"]) >= 5
    dry_bars = next(d for d in timeline["datasets"] if d["label"] == "dry run")["drawn"]
    assert dry_bars == sum(len(run["result"]) for run in runs if run["dry_run"])
    # The trends: one point per real run, each with the states its record counted and the merges it made.
    trends = {d["label"]: d["data"] for d in chart_data(page, "trend-chart")["datasets"]}
    real = sorted((run for run in runs if not run["dry_run"]), key=lambda run: run["started_at"])
    assert trends["active"] == [run.get("counts", {}).get("active") for run in real]
    # What the runs did is drawn apart, on its own scale: not against the thousands of memories in a state.
    decisions = {d["label"]: d["data"] for d in chart_data(page, "decisions-chart")["datasets"]}
    assert decisions["merged in the run"] == [run["result"].get("dedup", {}).get("merged", 0) for run in real]
    assert "merged in the run" not in trends
    charts_read_plainly(page, 1400)

    # The history filtered by task from the page.
    page.select_option('#history-filters select[name="task"]', "forget")
    page.wait_for_function("() => [...document.querySelectorAll('#runs-table tbody tr td:nth-child(3)')]"
                           ".every((cell) => cell.textContent.includes('forget'))")
    page.select_option('#history-filters select[name="task"]', "")

    # The other panels show the stores' numbers.
    clusters = call("GET", "/clusters")
    assert clusters["total"] >= 2
    assert page.locator("#clusters-table tbody tr").count() == min(clusters["total"], 10)
    merges = call("GET", "/hygiene/merges")
    assert merges["total"] > 0 and f"of {merges['total']}" in page.inner_text('.pager[data-for="merges"]')
    counts = services.stores.graph.count_memories(), services.stores.vectors.count()
    assert f"memories in the graph\n{counts[0]}" in page.inner_text("#drift-counts")
    assert f"points in Qdrant\n{counts[1]}" in page.inner_text("#drift-counts")
    assert "running" in page.inner_text("#scheduler-state")

    # A run in progress (begun here, as another process would) shows its live progress on the next status poll,
    # and leaves the panel when it ends.
    engine = services.engine
    run = engine.begin(["decay"], dry_run=True, trigger="test")
    engine.runs.update(run.id, {"current_task": "decay", "progress": {"task": "decay", "processed": 3, "total": 7,
                                                                      "elapsed_seconds": 0.5}})
    page.wait_for_selector(f"#current-run-state:has-text('{run.id[:8]}')")
    assert "(decay, dry run)" in page.inner_text("#current-run-state")
    assert "decay 3 / 7 memories" in page.inner_text("#current-run-state")
    assert page.eval_on_selector("#current-run-progress", "bar => [bar.value, bar.max, bar.hidden]") == [3, 7, False]
    # Cancelled from the page: the run stops before its task starts.
    page.click("#cancel-run")
    assert dialogs[-1].startswith(f"Cancel run {run.id[:8]}")
    page.wait_for_selector("#notice:has-text('next safe point')")
    assert engine.execute(run)["state"] == "cancelled"
    page.wait_for_selector("#current-run-state:has-text('No run in progress')")
    assert page.is_hidden("#cancel-run")
    # ... and says how that run ended, the cancel notice gone with it.
    page.wait_for_selector(f"#current-run-state:has-text('Run {run.id[:8]} was cancelled')")
    assert page.is_hidden("#notice") or "next safe point" not in page.inner_text("#notice")

    # The settings in force, secrets hidden.
    page.click("#settings summary")
    settings_text = page.inner_text("#settings-facts")
    assert "consolidation_grace_period_days" in settings_text and TOKEN not in page.content()
    page.click("#settings summary")  # folded again: the picture shows the rest of the page

    # The schedule paused and resumed from the page, as status says.
    page.click("#schedule-toggle")
    page.wait_for_selector("#schedule-state:has-text('paused')")
    assert call("GET", "/consolidate/status")["paused"] is True
    later = engine.clock() + timedelta(days=2)  # decay is due by then; paused, the scheduler skips it
    assert engine.run_due(later) is None and "decay" in due_tasks(engine.control.state(),
                                                                   engine.settings.task_intervals, later, 1.0)
    page.click("#schedule-toggle")
    page.wait_for_selector("#schedule-state:has-text('running')")
    assert call("GET", "/consolidate/status")["paused"] is False

    # A dry forget from the page: confirmed, then every decision with its reason, and nothing written.
    second = service["second"]
    page.click("#forget-preview-button")
    page.wait_for_selector("#forget-decisions:not([hidden]) tbody tr")
    assert dialogs[-1].startswith("Preview forgetting?")
    rows = page.locator("#forget-decisions tbody tr")
    shown = {rows.nth(i).locator("code").get_attribute("title"): rows.nth(i).inner_text().split("\t")
             for i in range(rows.count())}
    latest = call("GET", "/consolidate/runs", params={"limit": 1})["items"][0]
    assert latest["dry_run"] and latest["tasks"] == ["forget"]
    report = call("GET", f"/consolidate/runs/{latest['run_id']}")["result"]["forget"]
    listed = report["decisions"] + report["protections"]
    assert {d["memory_id"]: d["action"] for d in listed} == {i: row[1] for i, row in shown.items()}
    expected_reasons = {
        "delete": f"< delete threshold {DELETE_BELOW}", "archive": f"< archive threshold {ARCHIVE_BELOW}",
        "protect_type": "type Decision is protected", "protect_importance": "importance 0.90 >= 0.7",
    }
    for group, reason in expected_reasons.items():
        (planted,) = second[group]
        assert reason in shown[planted["id"]][2], (group, shown[planted["id"]])
        assert shown[planted["id"]][1] == group.split("_")[0]
    for planted in second["delete"] + second["archive"]:
        assert call("GET", f"/memory/{planted['id']}")["memory"]["archived"] is False

    # The dry run opened from the history: its decisions, each memory by its text.
    page.wait_for_selector(f'#runs-table button.open-run[data-run-id="{latest["run_id"]}"]')
    page.click(f'#runs-table button.open-run[data-run-id="{latest["run_id"]}"]')
    page.wait_for_selector("#run-detail:not([hidden]) table.report tbody tr")
    detail = page.inner_text("#run-detail")
    assert "dry run: what would change" in detail and "decisions" in detail
    assert second["delete"][0]["content"] in detail and second["archive"][0]["content"] in detail
    # In words: numbers formatted (a relevance of about 1e-7 reads "<0.0001", never as an exponent), fields
    # named, reasons as sentences; the report as the service gave it one click away.
    words = run_detail_in_words(page)
    assert not EXPONENT.search(words), EXPONENT.search(words)
    assert "<0.0001" in words and "memories looked at" in words and "memories_processed" not in words
    assert "Relevance 0.0000 < delete threshold 0.05." in words
    raw = page.locator("#run-detail details.raw-json")
    assert raw.count() == len(latest["tasks"]) and not raw.first.get_attribute("open")
    raw.first.locator("summary").click()
    assert raw.first.locator("summary").inner_text() == "raw JSON"
    given = call("GET", f"/consolidate/runs/{latest['run_id']}/report", params={"task": "forget"})
    assert json.loads(raw.first.locator("pre").inner_text())["report"] == given["report"]
    raw.first.locator("summary").click()  # folded again

    # Look a deleted memory up: the page shows the text its tombstone kept and until when it can be restored.
    deleted = service["first"]["deleted"][0]["id"]
    page.fill("#lookup-id", deleted)
    page.click("#lookup-form button")
    page.wait_for_selector("#lookup-facts:not([hidden]) dd")
    facts = page.inner_text("#lookup-facts")
    assert "deleted" in facts and "restorable until" in facts
    assert "the VPN certificate rotation reminder" in facts  # the text its tombstone kept

    # Restore a deleted memory from its row, found by its text; the API then has it back, active.
    page.click('#restorable-kinds button[data-kind="deleted"]')
    page.fill("#restorable-q", "no such text anywhere")
    page.click("#restorable-filter button")
    page.wait_for_selector("#restorable-table:has-text('no deleted memories')")
    page.fill("#restorable-q", "VPN CERTIFICATE rotation reminder")
    page.click("#restorable-filter button")
    page.wait_for_selector(f'#restorable-table button.restore[data-memory-id="{deleted}"]')
    assert page.locator("#restorable-table tbody tr").count() == 3  # the three temporary notes, nothing else
    page.click(f'#restorable-table button.restore[data-memory-id="{deleted}"]')
    page.wait_for_selector("#restore-message:has-text('Restored')")
    assert "from its tombstone" in page.inner_text("#restore-message")
    assert dialogs[-1].startswith(f"Restore memory {deleted[:8]}")
    restored = call("GET", f"/memory/{deleted}")["memory"]
    assert restored["archived"] is False and restored["content"] == service["first"]["deleted"][0]["content"]
    page.wait_for_function(
        "(id) => !document.querySelector(`#restorable-table button[data-memory-id='${id}']`)", arg=deleted)
    assert "active, held until" in page.inner_text("#restore-message")
    page.click("#lookup-form button")
    page.wait_for_selector("#lookup-facts:has-text('held until')")
    assert "active" in page.inner_text("#lookup-facts") and "–" not in page.inner_text("#lookup-facts dd:nth-of-type(6)")
    # Found by its text, opened: its history says it was deleted by a run, then restored.
    restored_text = service["first"]["deleted"][0]["content"]
    page.fill("#lookup-id", restored_text[5:25])
    page.click("#lookup-form button")
    page.wait_for_selector(f'#found-table:not([hidden]) button.open-memory[data-memory-id="{deleted}"]')
    page.click(f'#found-table button.open-memory[data-memory-id="{deleted}"]')
    page.wait_for_selector("#events-table:not([hidden]) tbody tr:has-text('restored')")
    history = page.inner_text("#events-table")
    assert "deleted" in history and "restored" in history

    # A canonical memory's history names each duplicate merged into it, by its text, with the merge's reason.
    merge = next(item for item in call("GET", "/hygiene/merges")["items"] if item["state"] == "done")
    page.fill("#lookup-id", merge["canonical_id"])
    page.click("#lookup-form button")
    merged_in = page.locator(f'#events-table tr:has(code[title="{merge["duplicate_id"]}"])').first
    merged_in.wait_for()
    assert "a duplicate merged into it" in merged_in.inner_text()
    assert merge["duplicate_content"] in merged_in.inner_text() and "similarity" in merged_in.inner_text()
    assert clipped_cells(page) == []

    assert problems == []
    # The wrong token's sign-in, and nothing else (a deleted memory opens through its detail: no 410 asked for).
    assert refused == [(401, "/consolidate/status")]
    target = request.config.getoption("--dashboard-screenshot")
    page.screenshot(path=str(Path(target) if target else tmp_path / "dashboard.png"), full_page=True)

    # At 420 px: no part of the page is cut off (each list's rows wrap into cards), and every button can be
    # brought on screen. The archived memories listed (the filter emptied: their rows, not the last ones, shown).
    page.set_viewport_size({"width": 420, "height": 900})
    page.fill("#restorable-q", "")
    page.click('#restorable-kinds button[data-kind="archived"]')
    page.wait_for_selector(f'#restorable-table button.restore[data-memory-id="{service["first"]["archived"][0]["id"]}"]')
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 420
    # Each run's Open button (the way into a run) on screen, no cell cut off, and the rest as on a wide screen.
    opens = page.locator("#runs-table button.open-run")
    assert opens.count() > 0
    for index in range(opens.count()):
        opens.nth(index).scroll_into_view_if_needed()
        box = opens.nth(index).bounding_box()
        assert box is not None and 0 <= box["x"] and box["x"] + box["width"] <= 420
    assert clipped_cells(page) == []
    assert merged_in.is_visible() and merge["duplicate_content"] in merged_in.inner_text()
    assert not EXPONENT.search(run_detail_in_words(page))
    charts_read_plainly(page, 420)
    page.evaluate("window.scrollTo(0, 0)")
    finding_comes_first(page, 900)
    buttons = page.locator("#dashboard button:visible")
    assert buttons.count() > 10
    for index in range(buttons.count()):
        button = buttons.nth(index)
        button.scroll_into_view_if_needed()
        box = button.bounding_box()
        assert box is not None and 0 <= box["x"] and box["x"] + box["width"] <= 420, button.inner_text()
    page.screenshot(path=str(tmp_path / "dashboard-420.png"), full_page=True)
    page.close()


def test_with_several_graphs_the_dashboard_offers_each_and_shows_the_chosen_one(browser, tmp_path):
    from playwright.sync_api import expect

    settings = make_settings(tmp_path / "data", falkordb_graphs="team_a,team_b")  # neither is the default
    services = build_services(settings)
    server = LoopbackServer(create_app(settings, services=services, start_scheduler=False)).start()
    try:
        for n in range(3):
            answer = requests.post(f"{server.url}/memory", json={"content": f"team b note {n}"},
                                   headers={**AUTH, "X-Graph": "team_b"}, timeout=30)
            assert answer.status_code == 201, answer.text
        page = browser.new_page()
        page.set_default_timeout(15000)
        page.goto(f"{server.url}/dashboard")
        page.fill("#token", TOKEN)
        page.click("#sign-in-form button[type=submit]")
        page.wait_for_selector("body[data-loaded]")
        assert page.is_visible("#graph-picker")
        assert page.eval_on_selector_all("#graph option", "options => options.map(o => o.value)") == [
            "team_a", "team_b"]
        assert page.input_value("#graph") == "team_a"  # no default graph: the first one is shown
        in_graph = page.locator("#drift-counts dd").first
        expect(in_graph).to_have_text("0")  # team_a holds no memories
        page.select_option("#graph", "team_b")
        expect(in_graph).to_have_text("3")
        # Everything the page asks from now on names team_b.
        with page.expect_request(lambda r: r.url.endswith("/consolidate/status")) as asked:
            page.click("#refresh")
            page.wait_for_timeout(2500)  # the next status poll
        assert asked.value.headers.get("x-graph") == "team_b"
        page.close()
    finally:
        server.stop()
        services.close()


# --- recall, updates and forgetting on request ---------------------------------------------------------------

class Session:
    """A signed-in page, with what went wrong in it: script errors, refused requests, and the dialogs it showed
    (each accepted unless the test said to dismiss the next one)."""

    def __init__(self, browser, url: str):
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(15000)
        self.problems: list[str] = []
        self.refused: list[tuple[int, str]] = []
        self.dialogs: list[str] = []
        self.dismiss_next = False
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        self.page.on("console", lambda message: self.problems.append(message.text)
                     if message.type == "error" and not message.text.startswith("Failed to load resource") else None)
        self.page.on("response", lambda response: self.refused.append((response.status, urlsplit(response.url).path))
                     if response.status >= 400 else None)
        self.page.on("dialog", self._answer)
        self.page.goto(f"{url}/dashboard")
        self.page.fill("#token", TOKEN)
        self.page.click("#sign-in-form button[type=submit]")
        self.page.wait_for_selector("body[data-loaded]")

    def _answer(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        if self.dismiss_next:
            self.dismiss_next = False
            dialog.dismiss()
        else:
            dialog.accept()

    def open_memory(self, memory: dict) -> None:
        """The memory's view, as a user opens it: its id in the lookup field."""
        self.page.fill("#lookup-id", memory["id"])
        self.page.click("#lookup-form button")
        self.page.locator("#lookup-facts dd", has_text=memory["content"]).wait_for()

    def fits(self, width: int, parts: list[str]) -> None:
        """At this width nothing overflows the page, and each visible button of these parts is on screen."""
        self.page.set_viewport_size({"width": width, "height": 900})
        assert self.page.evaluate("document.scrollingElement.scrollWidth") <= width
        for part in parts:
            buttons = self.page.locator(f"{part} button:visible")
            for index in range(buttons.count()):
                buttons.nth(index).scroll_into_view_if_needed()
                box = buttons.nth(index).bounding_box()
                assert box is not None and 0 <= box["x"] and box["x"] + box["width"] <= width, part
        self.page.set_viewport_size({"width": 1400, "height": 1000})


@pytest.fixture
def session(service, browser):
    opened = Session(browser, service["url"])
    yield opened
    opened.page.close()


def create(url: str, content: str, **fields) -> dict:
    """A memory added over the API, as an agent adds one."""
    answer = requests.post(f"{url}/memory", json={"content": content, **fields}, headers=AUTH, timeout=60)
    assert answer.status_code == 201, answer.text
    return answer.json()["memory"]


def status_of(url: str, memory_id: str) -> int:
    return requests.get(f"{url}/memory/{memory_id}", headers=AUTH, timeout=60).status_code


def recalled_ids(call, query: str, k: int, state: str) -> list[str]:
    return [hit["id"] for hit in call("POST", "/recall", json={"query": query, "k": k, "state": state})["results"]]


def shown_relevance(value: float | None) -> str:
    """A relevance as the page writes it (format.js `relevance`): 4 decimals, a tiny one as "<0.0001"."""
    if value is None:
        return "–"
    return "0" if value == 0 else "<0.0001" if value < 0.0001 else f"{value:.4f}"


def shown_hits(page, column: str) -> list[str]:
    return page.eval_on_selector_all(f"#recall-{column}-hits li.hit", "items => items.map(i => i.dataset.memoryId)")


def test_recall_shows_current_and_history_side_by_side(service, session):
    url, call, page = service["url"], service["call"], session.page
    older = create(url, "The quarterly planning meeting happens in the Orion room on Tuesdays", type="Context")
    newer_text = "The quarterly planning meeting moved to the Vega room on Thursdays"
    superseded = call("POST", f"/memory/{older['id']}/supersede", json={"content": newer_text})
    newer = superseded["superseded_by"]
    query, k = "quarterly planning meeting in the Orion room", 5

    page.fill("#recall-query", query)
    page.fill("#recall-k", str(k))
    page.click("#recall-form button[type=submit]")
    page.wait_for_selector("#recall-current-hits li.hit")
    page.wait_for_selector("#recall-history-hits li.hit")

    # Each column is the API's answer in its order; the two differ where the supersession is.
    current, history = shown_hits(page, "current"), shown_hits(page, "history")
    assert current == recalled_ids(call, query, k, "current")
    assert history == recalled_ids(call, query, k, "history")
    assert newer in current and older["id"] not in current
    assert older["id"] in history and newer in history
    # In current, the newer memory says which hit it stands for, with that hit's text.
    standing_in = page.locator(f'#recall-current-hits li[data-memory-id="{newer}"]')
    assert newer_text in standing_in.inner_text()
    replaces = standing_in.locator(".replaces")
    assert replaces.locator("code").get_attribute("title") == older["id"]
    assert older["content"] in replaces.inner_text()
    # In history, the older one is marked superseded, by which memory.
    old_hit = page.locator(f'#recall-history-hits li[data-memory-id="{older["id"]}"]')
    assert "superseded" in old_hit.get_attribute("class")
    assert old_hit.locator(".replaces code").get_attribute("title") == newer
    # Type, similarity, relevance and state as the API gave them.
    first = call("POST", "/recall", json={"query": query, "k": k, "state": "history"})["results"][0]
    first_text = page.locator("#recall-history-hits li.hit").first.inner_text()
    relevance = shown_relevance(first["relevance"])
    for shown in (first["type"], f"similarity {first['similarity']:.3f}", f"relevance {relevance}", first["state"]):
        assert shown in first_text

    # Side by side on a wide screen, one above the other at 420 px, and nothing overflows.
    columns = [page.locator(f"#recall-{column}").bounding_box() for column in ("current", "history")]
    assert columns[0]["y"] == columns[1]["y"] and columns[0]["x"] < columns[1]["x"]
    session.fits(420, ["#recall"])
    page.set_viewport_size({"width": 420, "height": 900})
    columns = [page.locator(f"#recall-{column}").bounding_box() for column in ("current", "history")]
    assert columns[1]["y"] >= columns[0]["y"] + columns[0]["height"]
    page.set_viewport_size({"width": 1400, "height": 1000})

    # A recalled memory opens in the memory view, ready to be superseded or forgotten.
    standing_in.locator("button.open-memory").click()
    page.wait_for_selector(f"#lookup-facts:not([hidden]) dd:has-text('{newer_text}')")
    assert page.input_value("#lookup-id") == newer
    assert page.is_visible("#supersede-open") and page.is_visible("#forget-memory")
    assert session.problems == [] and session.refused == []


def test_supersede_and_undo_from_a_memory_view(service, session):
    url, call, page = service["url"], service["call"], session.page
    # A compound memory: the update changes where she lives; where she works stands as a memory of its own.
    older = create(url, "Priya lives in Lisbon and teaches at the conservatory", type="Preference")
    session.open_memory(older)
    page.click("#supersede-open")

    # A wrong id: the API's own message, and nothing superseded.
    page.fill("#supersede-form input[name=by]", "not-a-memory-id")
    page.click("#supersede-form button[type=submit]")
    page.wait_for_selector("#memory-request .error")
    assert page.inner_text("#memory-request") == (
        "Could not supersede: by: must be a UUID like 5f0c6f7e-0d1b-4c9e-9a51-6f7d1f2e3a4b, got 'not-a-memory-id'")
    assert call("GET", f"/memory/{older['id']}")["memory"]["superseded_by"] is None
    # Both a text and an id: refused here, before anything is sent.
    page.fill("#supersede-form textarea", "Priya moved to Porto")
    page.click("#supersede-form button[type=submit]")
    page.wait_for_selector("#memory-request:has-text('one of the two')")
    asked = len(session.dialogs)

    # The new text, confirmed: the answer names the new memory and the survivors of the split.
    page.fill("#supersede-form input[name=by]", "")
    with page.expect_request(lambda r: r.url.endswith(f"/memory/{older['id']}/supersede")) as sent:
        page.click("#supersede-form button[type=submit]")
    page.wait_for_selector("#supersede-undo")
    assert len(session.dialogs) == asked + 1
    assert session.dialogs[-1].startswith(f"Supersede memory {older['id'][:8]} by a new memory: \"Priya moved")
    assert len(sent.value.headers.get("idempotency-key", "")) == 32
    newer = page.get_attribute("#memory-request code.newer", "title")
    stored = call("GET", f"/memory/{older['id']}")["memory"]
    assert stored["superseded_by"] == newer
    made = call("GET", f"/memory/{newer}")["memory"]
    assert made["content"] == "Priya moved to Porto" and made["type"] == "Preference"  # it keeps the type
    survivors = page.eval_on_selector_all("#memory-request .survivors code", "codes => codes.map(c => c.title)")
    assert survivors, page.inner_text("#memory-request")
    for survivor in survivors:
        kept = call("GET", f"/memory/{survivor}")["memory"]
        assert kept["split_from"] == older["id"] and "conservatory" in kept["content"]
        assert kept["content"] in page.inner_text("#memory-request .survivors")
    # The memory's view now says it is superseded, and offers no second supersession.
    page.wait_for_selector(f"#lookup-facts dd:has-text('{newer}')")
    page.wait_for_selector("#memory-actions:has-text('Superseded by')")
    assert page.locator("#supersede-open").count() == 0

    # Undo: the memory is current again; what the supersession made is forgotten, restorable.
    page.click("#supersede-undo")
    page.wait_for_selector("#memory-request:has-text('Undone')")
    assert session.dialogs[-1].startswith(f"Undo the supersession of {older['id'][:8]}?")
    assert call("GET", f"/memory/{older['id']}")["memory"]["superseded_by"] is None
    for made_id in [newer, *survivors]:
        assert status_of(url, made_id) == 410
        assert made_id in page.eval_on_selector_all("#memory-request code", "codes => codes.map(c => c.title)")
    page.wait_for_selector("#supersede-open")
    assert "superseded by\n–" in page.inner_text("#lookup-facts")

    # A cluster summary is rebuilt from its members, never superseded by hand: it may only be forgotten.
    summary = call("GET", f"/memory/{call('GET', '/clusters')['items'][0]['id']}")["memory"]
    assert summary["type"] == "MetaPattern"
    session.open_memory(summary)
    page.wait_for_selector("#forget-memory")
    assert page.locator("#supersede-open").count() == 0
    assert session.problems == []
    assert session.refused == [(400, f"/memory/{older['id']}/supersede")]


def test_forget_from_a_memory_view(service, session):
    url, page = service["url"], session.page
    doomed = create(url, "The loading dock door code is changed every Monday")
    session.open_memory(doomed)

    # Declined: nothing is sent.
    session.dismiss_next = True
    page.click("#forget-memory")
    assert session.dialogs[-1].startswith(f"Forget memory {doomed['id'][:8]}?")
    assert "restorable" in session.dialogs[-1]
    assert status_of(url, doomed["id"]) == 200

    page.click("#forget-memory")
    page.wait_for_selector("#memory-request:has-text('Forgotten')")
    gone = requests.get(f"{url}/memory/{doomed['id']}", headers=AUTH, timeout=60)
    assert gone.status_code == 410 and gone.json()["reason"] == "forgotten on request (admin)"
    assert "restorable" in page.inner_text("#memory-request")
    # The view shows the tombstone, until when it can be restored, and no more buttons.
    page.wait_for_selector("#lookup-facts:has-text('restorable until')")
    assert when_shown(gone.json()["restorable_until"]) in page.inner_text("#lookup-facts")
    assert page.is_hidden("#memory-actions")
    assert session.problems == []
    assert session.refused == []  # the view reads the tombstone through the memory's detail, not a 410


def when_shown(iso: str) -> str:
    """A time as the page writes it (dom.js `when`)."""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_purge_lists_a_dry_run_before_purging(service, session):
    url, call, page = service["url"], service["call"], session.page
    identifier = "quinn.harper@example.org"
    holding = [create(url, f"Ticket {n}: write to {identifier.upper() if n % 2 else identifier} about the lease")
               for n in range(12)]
    # A longer identifier that starts with it is another person's: it stays.
    other = create(url, f"Ticket 99: write to {identifier}.uk about the lease")
    holding_ids = {m["id"]: m["content"] for m in holding}

    page.fill("#purge-match", identifier)
    page.click("#purge-form button[type=submit]")
    page.wait_for_selector("#purge-confirm:not([hidden])")
    assert page.inner_text("#purge-summary").startswith(f'12 memories hold "{identifier}"')
    # The first ten with their text, the other two by id; the dry run wrote nothing.
    rows = page.locator("#purge-table tbody tr")
    assert rows.count() == 10
    listed = {}
    for index in range(rows.count()):
        listed[rows.nth(index).locator("code").get_attribute("title")] = rows.nth(index).inner_text()
    rest = page.eval_on_selector_all("#purge-more code", "codes => codes.map(c => c.title)")
    assert set(listed) | set(rest) == set(holding_ids) and len(rest) == 2
    for memory_id, row in listed.items():
        assert holding_ids[memory_id] in row and "active" in row
    assert all(status_of(url, memory_id) == 200 for memory_id in holding_ids)
    assert page.inner_text("#purge-run") == "Purge 12"
    # 12 of the store's memories: more than a tenth, so the purge needs the count confirmed.
    assert "would take 12" in page.inner_text("#purge-refused") and page.is_disabled("#purge-run")
    session.fits(420, ["#purge"])

    # Another identifier typed in: its own preview is needed before anything can be purged.
    page.fill("#purge-match", "someone.else@example.org")
    assert page.is_hidden("#purge-confirm")
    page.fill("#purge-match", identifier)
    page.click("#purge-form button[type=submit]")
    page.wait_for_selector("#purge-confirm:not([hidden])")

    page.check("#purge-erase")
    page.check("#purge-count")
    page.click("#purge-run")
    page.wait_for_selector("#purge-result:has-text('Purged')")
    assert session.dialogs[-1].startswith(f'Purge 12 memories holding "{identifier}"?')
    assert "cannot be restored" in session.dialogs[-1]
    assert page.inner_text("#purge-result") == "Purged: 12 memories deleted, their text erased."
    # Erased: gone, with nothing left to restore them from (not found, or gone).
    assert all(status_of(url, memory_id) in (404, 410) for memory_id in holding_ids)
    assert status_of(url, other["id"]) == 200
    assert page.is_hidden("#purge-confirm") and page.is_hidden("#purge-table")
    assert call("POST", "/memories/purge", json={"match": identifier})["matched"] == 0
    assert session.problems == [] and session.refused == []


def test_a_banner_says_while_automems_own_consolidation_writes_to_the_store(service, browser):
    falkor = service["services"].stores.graph.falkor
    at = datetime.now(UTC).isoformat()
    # AutoMem's record of a scheduled decay (persist_consolidation_run), as if it ran beside us just now.
    falkor.execute("CREATE (r:ConsolidationRun {id: 'automem-decay', mode: 'decay', task: 'decay', success: true, "
                   "dry_run: false, started_at: $at, completed_at: $at, result: '{}'})", {"at": at})
    session = Session(browser, service["url"])
    try:
        banner = session.page.locator("#automem-warning")
        banner.wait_for(state="visible")
        assert "CONSOLIDATION_DECAY_INTERVAL_SECONDS=0" in banner.inner_text()
        session.fits(420, ["header"])
        assert session.problems == []
    finally:
        falkor.execute("MATCH (r:ConsolidationRun {id: 'automem-decay'}) DELETE r")
        session.page.close()


# --- paging to the last item ---------------------------------------------------------------------------------

def shown_pages(page, pager_selector: str, table_selector: str, size: int, total: int) -> list[list[str]]:
    """Every page a pager shows, Next clicked until it is disabled: the memory ids of each page's rows, each page
    checked to say where it is ("51–100 of 130")."""
    from playwright.sync_api import expect

    pager, pages = page.locator(pager_selector), []
    for first in range(0, total, size):
        expect(pager.locator("span")).to_have_text(f"{first + 1}–{min(first + size, total)} of {total}")
        rows = page.locator(f"{table_selector} tbody tr code")
        pages.append([rows.nth(i).get_attribute("title") for i in range(rows.count())])
        if first + size < total:
            pager.get_by_role("button", name="Next").click()
    assert pager.get_by_role("button", name="Next").is_disabled()
    return pages


def test_the_forget_preview_and_an_opened_run_page_to_their_last_decision(browser, tmp_path):
    """More decisions than a page shows, and than a run record lists: both pagers reach the last one."""
    settings = make_settings(tmp_path / "data", consolidation_archive_threshold=ARCHIVE_BELOW,
                             consolidation_delete_threshold=DELETE_BELOW)
    services = build_services(settings)
    server = LoopbackServer(create_app(settings, services=services, start_scheduler=False)).start()
    long_ago = (datetime.now(UTC) - timedelta(days=400)).isoformat()
    old = {"timestamp": long_ago, "last_accessed": long_ago, "importance": 0.3}
    decided = add_memories(services, 123, content="stale note", **old)
    protected = add_memories(services, 7, content="old decision", type="Decision", **old)
    session = Session(browser, server.url)
    try:
        page = session.page
        page.click("#forget-preview-button")
        total = len(decided) + len(protected)
        preview = shown_pages(page, '.pager[data-for="forget-decisions"]', "#forget-decisions", 50, total)
        assert [len(ids) for ids in preview] == [50, 50, total - 100]
        assert sorted(sum(preview, [])) == sorted(decided + protected)
        assert set(preview[-1][-len(protected):]) == set(protected)  # the protections come after the decisions

        # The same run opened from the history: its decisions, 20 a page, to the last.
        page.click("#runs-table button.open-run")
        detail = shown_pages(page, '.pager[data-for="run-forget-decisions"]',
                             "#run-detail table.report:nth-of-type(1)", 20, len(decided))
        assert len(detail) == 7 and len(detail[-1]) == len(decided) - 120
        assert sorted(sum(detail, [])) == sorted(decided)
        assert session.problems == [] and session.refused == []
    finally:
        session.page.close()
        server.stop()
        services.close()
