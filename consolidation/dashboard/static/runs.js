// Runs: the scheduler and each task's last / next run, starting runs (after a confirmation), following the
// current run's progress, the run history (timeline, durations, table) and the forget preview.

import { get, post } from "./api.js";
import { TASKS, drawDecisions, drawDurations, drawTimeline, drawTrends } from "./charts.js";
import { el, fillFacts, fillRows, memoryCell, notify, shortId, when } from "./dom.js";
import { duration, relevance } from "./format.js";
import { Pager } from "./pager.js";
import { itemDetails, itemMemories, listHeading, rawJson, reportFacts } from "./reports.js";

const $ = (id) => document.getElementById(id);
const FOLLOW_EVERY_MS = 500;
const CHART_RUNS = 100; // the service keeps the newest 100 runs
const FORGET_PAGE = 50; // decisions a page of the forget preview shows
const REPORT_PAGE = 20; // items a page of each list of an opened run shows
// The forget preview's lists, shown one after the other as one list.
const FORGET_LISTS = ["decisions", "protections", "awaiting_deletion"];

let onRunFinished = () => {};
let following = null;
let lastRunningId = null; // the run the panel last showed running: once it ends, the panel says how

export function setUp(finished) {
  onRunFinished = finished;
  const body = $("tasks").tBodies[0];
  body.replaceChildren(...TASKS.map((task) => el("tr", { dataset: { task } },
    el("th", { text: task }), el("td", { className: "last", dataset: { label: "last run" } }),
    el("td", { className: "next", dataset: { label: "next run" } }),
    el("td", {},
      el("button", { type: "button", className: "run-dry", text: "Dry run", onclick: () => startRun(task, true) }),
      " ",
      el("button", { type: "button", className: "run-real danger", text: "Run", onclick: () => startRun(task, false) })))));
  $("run-full-dry").addEventListener("click", () => startRun("full", true));
  $("run-full-real").addEventListener("click", () => startRun("full", false));
  $("forget-preview-button").addEventListener("click", () => startRun("forget", true,
    "Preview forgetting? This dry run only reports what forgetting would do; it writes nothing."));
  $("schedule-toggle").addEventListener("click", toggleSchedule);
  $("history-filters").addEventListener("change", () => historyPager.load(0));
  $("cancel-run").addEventListener("click", cancelRun);
}

let schedulePaused = false;
let whyNot = {}; // task -> why it will not run on schedule, from GET /consolidate/settings

/** The settings in force (secrets only as "(set)") and, beside each task that will not run, why. */
export async function loadSettings() {
  const answer = await get("/consolidate/settings");
  whyNot = Object.fromEntries(Object.entries(answer.tasks).map(([task, outlook]) => [task, outlook.why_not]));
  fillFacts($("settings-facts"), Object.entries(answer.settings).map(([name, value]) =>
    [name, Array.isArray(value) ? value.join(", ") : typeof value === "object" && value !== null
      ? JSON.stringify(value) : String(value)]));
  showPaused(answer.paused);
}
let shownRunId = null;

/** Pause or resume the schedule of this graph in every process (runs asked here still run). */
async function toggleSchedule() {
  const pausing = !schedulePaused;
  if (!window.confirm(pausing ? "Pause the schedule? No scheduled run starts until it is resumed."
    : "Resume the schedule?")) return;
  try {
    const answer = await post("/consolidate/scheduler", { paused: pausing });
    showPaused(answer.paused);
    notify(answer.paused ? "Schedule paused." : "Schedule resumed.");
  } catch (error) {
    notify(`Could not ${pausing ? "pause" : "resume"} the schedule: ${error.message}`, true);
  }
}

function showPaused(paused) {
  schedulePaused = Boolean(paused);
  $("schedule-state").textContent = schedulePaused ? "paused" : "running";
  $("schedule-toggle").textContent = schedulePaused ? "Resume schedule" : "Pause schedule";
}

/** Ask the run shown to stop at its next safe point (between chunks). */
async function cancelRun() {
  if (!shownRunId || !window.confirm(`Cancel run ${shortId(shownRunId)}? It stops between chunks.`)) return;
  try {
    await post(`/consolidate/runs/${encodeURIComponent(shownRunId)}/cancel`);
    notify(`Run ${shortId(shownRunId)} will stop at its next safe point.`);
  } catch (error) {
    notify(`Could not cancel the run: ${error.message}`, true);
  }
}

/** The scheduler, each task's last and next run, and a run in progress, from GET /consolidate/status. */
export function showStatus(status) {
  const scheduler = status.scheduler;
  fillFacts($("scheduler-state"), [
    ["scheduler", scheduler.enabled ? (scheduler.alive ? "running" : "enabled, not running") : "disabled"],
    ["looks every", `${scheduler.tick_seconds} s`],
    ["last look", when(scheduler.last_tick_at)],
    ["last error", scheduler.last_error ?? "none"],
  ]);
  if (status.paused !== undefined && status.paused !== null) showPaused(status.paused);
  for (const row of $("tasks").tBodies[0].rows) {
    const task = row.dataset.task;
    row.querySelector(".last").textContent = when(status[`last_${task}`]);
    const off = task === "forget" && status.forgetting && !status.forgetting.scheduled;
    row.querySelector(".next").textContent = off ? `forget: ${status.forgetting.note}`
      : whyNot[task] ? whyNot[task] : status.next_due[task] ? when(status.next_due[task]) : "not scheduled";
  }
  if (!following) showProgress(status.current_run);
}

/** How the run the panel was showing ended (cancelled, succeeded, failed), from its record. */
async function showEnded(runId) {
  const state = $("current-run-state");
  state.textContent = "No run in progress.";
  try {
    const record = await get(`/consolidate/runs/${encodeURIComponent(runId)}`);
    const how = record.state === "cancelled" ? "was cancelled (it stopped at a safe point; what it wrote is whole)"
      : record.state === "succeeded" ? "succeeded" : `ended ${record.state}`;
    state.textContent = `No run in progress. Run ${shortId(runId)} ${how} ${when(record.finished_at)}.`;
    const notice = $("notice");
    if (notice.textContent.includes("next safe point")) notice.hidden = true; // the request is answered now
  } catch (error) {
    // The record may be gone (pruned): the panel already says no run is in progress.
  }
}

function showProgress(run) {
  const state = $("current-run-state");
  const bar = $("current-run-progress");
  shownRunId = run && run.state === "running" ? run.run_id : null;
  $("cancel-run").hidden = shownRunId === null;
  if (!run || run.state !== "running") {
    bar.hidden = true;
    if (lastRunningId) showEnded(lastRunningId);
    else state.textContent = "No run in progress.";
    lastRunningId = null;
    return;
  }
  lastRunningId = run.run_id;
  const progress = run.progress || {};
  const done = progress.total ? ` ${progress.processed} / ${progress.total} memories` : "";
  const elapsed = progress.elapsed_seconds !== undefined ? `, ${progress.elapsed_seconds} s in the task` : "";
  state.textContent = `Run ${shortId(run.run_id)} (${run.tasks.join(", ")}${run.dry_run ? ", dry run" : ""}) ` +
    `started ${when(run.started_at)}: ${progress.task ?? run.tasks[0]}${done}${elapsed}`;
  bar.max = progress.total || 1;
  bar.value = progress.total ? progress.processed : 0;
  bar.hidden = false;
}

async function startRun(task, dryRun, question) {
  const what = task === "full" ? "all five tasks" : task;
  const asked = question ?? (dryRun
    ? `Dry run of ${what}? It reports what would change and writes nothing.`
    : `Run ${what} for real? It changes stored memories.`);
  if (!window.confirm(asked)) return;
  try {
    const started = await post("/consolidate", { task, dry_run: dryRun, trigger: "dashboard" });
    notify(`Run ${shortId(started.run_id)} started.`);
    const run = await follow(started.run_id);
    $("last-run-result").textContent = describe(run);
    onRunFinished(run);
    if (dryRun && task !== "forget") openRun(run);
  } catch (error) {
    notify(`Could not run ${what}: ${error.message}`, true);
  }
}

/** Poll one run until it is no longer running, showing its progress meanwhile. */
async function follow(runId) {
  following = runId;
  try {
    for (;;) {
      const run = await get(`/consolidate/runs/${encodeURIComponent(runId)}`);
      if (run.state !== "running") return run;
      showProgress(run);
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_EVERY_MS));
    }
  } finally {
    following = null;
    showProgress(null);
  }
}

function describe(run) {
  const parts = Object.entries(run.result || {}).map(([task, report]) =>
    report.cancelled && report.seconds === undefined ? `${task} not started (cancelled)`
      : `${task} ${report.success ? "ok" : report.cancelled ? "cancelled" : `failed (${report.error})`} in ${duration(report.seconds)}`);
  return `Last run ${shortId(run.run_id)}${run.dry_run ? " (dry run)" : ""} ${run.state}: ${parts.join("; ")}.`;
}

/** The decisions of a dry forget: what would be archived, deleted or protected, each with its reason. */
export async function showForgetPreview(run) {
  const report = run.result?.forget;
  if (!report || !report.success) return;
  // Off, every memory is "kept": say why rather than let it read as nothing below a line.
  const off = report.forgetting_enabled === false ? `${report.forgetting_note}. ` : "";
  $("forget-summary").textContent = off +
    `Run ${shortId(run.run_id)} (${when(run.finished_at)}, ${report.pass} pass): of ${report.memories_processed} memories, ` +
    `${report.archived} would be archived, ${report.deleted} deleted, ${report.protected} protected, ` +
    `${report.awaiting_deletion_total ?? 0} archived awaiting deletion; ${report.kept} kept.`;
  previewRunId = run.run_id;
  try {
    await forgetPager.load(0);
    $("forget-decisions").hidden = false;
  } catch (error) {
    notify(`Could not open the forget preview: ${error.message}`, true);
  }
}

let previewRunId = null;
const forgetPager = new Pager(document.querySelector('.pager[data-for="forget-decisions"]'), FORGET_PAGE,
  (limit, offset) => forgetPage(previewRunId, limit, offset),
  (page) => fillRows($("forget-decisions"), page.items, (decision) => [
    memoryCell(decision.memory_id, page.texts[decision.memory_id] ?? decision.content),
    el("span", { className: `decision ${decision.action}`, text: decision.action }),
    decision.reason,
    relevance(decision.relevance),
    decision.deletable_at ? when(decision.deletable_at) : "—",
  ], "nothing below a threshold: forgetting would change nothing"));

/** A page of the preview's lists as one (decisions, then protections, then those awaiting deletion), from the
 * report route, which pages every list of the report at one offset: one request per list the page reaches. */
async function forgetPage(runId, limit, offset) {
  const asked = new Map();
  const report = (from) => {
    if (!asked.has(from)) {
      asked.set(from, get(`/consolidate/runs/${encodeURIComponent(runId)}/report`, { task: "forget", limit, offset: from }));
    }
    return asked.get(from);
  };
  const first = await report(offset);
  const items = [];
  let texts = {};
  let start = 0; // where the list begins in the whole
  for (const name of FORGET_LISTS) {
    const kept = first.lists[name]?.kept ?? 0;
    const from = Math.max(0, offset - start);
    const wanted = Math.min(kept, offset + limit - start) - from;
    if (wanted > 0) {
      const opened = await report(from);
      items.push(...opened.lists[name].items.slice(0, wanted));
      texts = { ...texts, ...opened.texts };
    }
    start += kept;
  }
  return { items, total: start, limit, offset, texts };
}

// --- history ------------------------------------------------------------------------------------------------

/** The history's filters as query parameters (an empty choice: any). */
function historyFilters() {
  const chosen = new FormData($("history-filters"));
  return Object.fromEntries([...chosen.entries()].filter(([, value]) => value));
}

const historyPager = new Pager(document.querySelector('.pager[data-for="runs"]'), 10,
  (limit, offset) => get("/consolidate/runs", { limit, offset, ...historyFilters() }),
  (page) => fillRows($("runs-table"), page.items, (run) => [
    when(run.started_at),
    el("span", { className: `state ${run.state}`, text: run.state + (run.dry_run ? " (dry)" : "") }),
    run.tasks.join(", "),
    run.trigger,
    duration(run.duration_seconds),
    el("button", { type: "button", className: "open-run", dataset: { runId: run.run_id }, text: "Open",
      onclick: () => openRun(run) }),
  ], "no runs yet"));

/** A run opened: per task its counts and its decisions, each memory by its text. */
export async function openRun(run) {
  const body = $("run-detail-body");
  body.replaceChildren();
  $("run-detail-title").textContent =
    `Run ${shortId(run.run_id)}${run.dry_run ? " (dry run: what would change)" : ""}, ${run.state}, ${when(run.started_at)}`;
  for (const task of run.tasks) {
    let opened;
    try {
      opened = await get(`/consolidate/runs/${encodeURIComponent(run.run_id)}/report`, { task, limit: REPORT_PAGE });
    } catch (error) {
      body.append(el("h3", { text: task }), el("p", { className: "muted", text: error.message }));
      continue;
    }
    body.append(el("h3", { text: task }), reportFacts(opened.report));
    for (const [name, listed] of Object.entries(opened.lists)) {
      const table = el("table", { className: "compact report" }, el("thead", {}, el("tr", {},
        el("th", { text: "memories" }), el("th", { text: "details" }))), el("tbody"));
      const pager = el("div", { className: "pager", dataset: { for: `run-${task}-${name}` } });
      body.append(listHeading(name, listed), table, pager);
      showReportList(run.run_id, task, name, table, pager, { items: listed.items, total: listed.kept,
        limit: REPORT_PAGE, offset: 0, texts: opened.texts });
    }
    body.append(rawJson(opened));
  }
  $("run-detail").hidden = false;
  $("run-detail").scrollIntoView();
}

/** One list of a task's report in its table, its first page given, the others asked for by its pager. */
function showReportList(runId, task, name, table, container, first) {
  const render = (page) => fillRows(table, page.items, (item) => [itemMemories(item, page.texts), itemDetails(item)]);
  const pager = new Pager(container, REPORT_PAGE, async (limit, offset) => {
    const opened = await get(`/consolidate/runs/${encodeURIComponent(runId)}/report`, { task, limit, offset });
    const listed = opened.lists[name] ?? { items: [], kept: 0 };
    return { items: listed.items, total: listed.kept, limit, offset, texts: opened.texts };
  }, render);
  render(first);
  pager.draw(first);
}

/** The run table (its current page) and both charts (from the newest runs). */
export async function loadHistory() {
  const [recent, trends] = await Promise.all([get("/consolidate/runs", { limit: CHART_RUNS }),
    get("/consolidate/trends", { limit: CHART_RUNS }), historyPager.load()]);
  drawTimeline($("timeline-chart"), recent.items);
  drawDurations($("durations-chart"), recent.items);
  drawTrends($("trend-chart"), trends.points);
  drawDecisions($("decisions-chart"), trends.points);
}
