"""The dashboard in a real browser: Debian's headless Chromium, driven by playwright, against the service on
embedded stores over loopback HTTP. Sign-in (a wrong token refused), charts drawn with the stored numbers, a dry
forget with each decision's reason, and a restore that the API then confirms."""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
import requests

from consolidation.api import create_app
from consolidation.schedule import due_tasks
from consolidation.service import build_services
from tests.conftest import TOKEN, make_settings
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

    # The relevance histogram holds the stored scores, binned here independently of the route.
    expected = stored_histogram(services)
    relevance = chart_data(page, "relevance-chart")
    assert relevance["datasets"][0]["data"] == expected and sum(expected) > 20
    assert relevance["datasets"][0]["drawn"] == BINS
    shown_counts = [int(row.split("\t")[1]) for row in
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
    assert trends["merged in the run"] == [run["result"].get("dedup", {}).get("merged", 0) for run in real]

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
    assert engine.execute(run)["cancelled"] is True
    page.wait_for_selector("#current-run-state:has-text('No run in progress')")
    assert page.is_hidden("#cancel-run")

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

    # Look a deleted memory up: the page shows the 410's state and until when it can be restored.
    deleted = service["first"]["deleted"][0]["id"]
    page.fill("#lookup-id", deleted)
    page.click("#lookup-form button")
    page.wait_for_selector("#lookup-facts:not([hidden]) dd")
    facts = page.inner_text("#lookup-facts")
    assert "deleted" in facts and "restorable until" in facts

    # Restore a deleted memory from its row; the API then has it back, active.
    page.click('#restorable-kinds button[data-kind="deleted"]')
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

    assert problems == []
    # The wrong token's sign-in, the deleted memory's 410 looked up, and nothing else.
    assert refused == [(401, "/consolidate/status"), (410, f"/memory/{deleted}")]
    target = request.config.getoption("--dashboard-screenshot")
    page.screenshot(path=str(Path(target) if target else tmp_path / "dashboard.png"), full_page=True)

    # At 420 px: no part of the page is cut off (tables scroll inside their card), and every button can be
    # brought on screen.
    page.set_viewport_size({"width": 420, "height": 900})
    page.click('#restorable-kinds button[data-kind="archived"]')
    page.wait_for_selector("#restorable-table button.restore")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 420
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
