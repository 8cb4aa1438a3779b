// The charts, drawn with the vendored Chart.js (window.Chart) from what the JSON routes answer. Each has one
// y-axis with one meaning, and no two of its time labels read the same.

import { count, duration } from "./format.js";

export const TASKS = ["decay", "dedup", "creative", "cluster", "forget"];
const TASK_COLOURS = { decay: "#4e79a7", dedup: "#f28e2b", creative: "#59a14f", cluster: "#b07aa1", forget: "#e15759" };
const RUN_KINDS = [
  { kind: "real", label: "run", colour: "#4e79a7" },
  { kind: "dry", label: "dry run", colour: "#a0cbe8" },
  { kind: "failed", label: "failed", colour: "#e15759" },
  { kind: "cancelled", label: "cancelled", colour: "#bab0ac" },
];

/** Each task of each run as a bar on its task's row, laid end to end from the run's start. */
export function drawTimeline(canvas, runs) {
  const segments = { real: [], dry: [], failed: [], cancelled: [] };
  for (const run of runs) {
    let start = Date.parse(run.started_at);
    if (Number.isNaN(start)) continue;
    for (const task of run.tasks) {
      const outcome = run.outcomes[task];
      if (!outcome) continue; // not reached yet: the run is still going
      const end = start + (outcome.seconds ?? 0) * 1000;
      // A task an administrator cancelled stopped at a safe point: no failure, drawn apart from one.
      const kind = outcome.cancelled ? "cancelled" : outcome.success === false ? "failed" : run.dry_run ? "dry" : "real";
      segments[kind].push({ x: [start, end], y: task, run: run.run_id, seconds: outcome.seconds });
      start = end;
    }
  }
  return replaceChart(canvas, {
    type: "bar",
    data: {
      labels: TASKS,
      datasets: RUN_KINDS.map(({ kind, label, colour }) => ({
        label, data: segments[kind], backgroundColor: colour, borderColor: colour, grouped: false,
        // Most tasks take milliseconds: without a minimum length their bars would be invisible.
        minBarLength: 6, barPercentage: 0.7,
      })),
    },
    options: {
      ...common(),
      indexAxis: "y",
      scales: { x: timeAxis(Object.values(segments).flat().flatMap((segment) => segment.x)), y: { type: "category" } },
      plugins: {
        legend: { position: "bottom" },
        tooltip: { callbacks: { label: (item) => `${item.raw.y}: ${duration(item.raw.seconds)} (run ${item.raw.run.slice(0, 8)})` } },
      },
    },
  });
}

/** One line per task: how long it took in each run, by when the run started. */
export function drawDurations(canvas, runs) {
  const series = Object.fromEntries(TASKS.map((task) => [task, []]));
  for (const run of runs) {
    const start = Date.parse(run.started_at);
    if (Number.isNaN(start)) continue;
    for (const [task, outcome] of Object.entries(run.outcomes)) {
      if (series[task] && outcome.seconds !== null && outcome.seconds !== undefined) {
        series[task].push({ x: start, y: outcome.seconds, dry: run.dry_run });
      }
    }
  }
  return replaceChart(canvas, {
    type: "line",
    data: {
      datasets: TASKS.filter((task) => series[task].length).map((task) => ({
        label: task,
        data: series[task].sort((a, b) => a.x - b.x),
        borderColor: TASK_COLOURS[task],
        backgroundColor: TASK_COLOURS[task],
        // Dry runs write nothing, so they are often faster: hollow points tell them apart.
        pointBackgroundColor: series[task].map((point) => (point.dry ? "#ffffff" : TASK_COLOURS[task])),
        pointRadius: 4,
        tension: 0,
      })),
    },
    options: {
      ...common(),
      scales: {
        x: timeAxis(Object.values(series).flat().map((point) => point.x)),
        y: { beginAtZero: true, title: { display: true, text: "seconds" } },
      },
      plugins: {
        legend: { position: "bottom" },
        tooltip: { callbacks: { label: (item) => `${item.dataset.label}: ${duration(item.raw.y)}${item.raw.dry ? " (dry run)" : ""}` } },
      },
    },
  });
}

const STATE_COLOURS = { active: "#59a14f", archived: "#edc948", merged: "#f28e2b", deleted: "#e15759" };

/** GET /consolidate/trends: one line per state, how many memories were in it after each real run. */
export function drawTrends(canvas, points) {
  const states = Object.keys(STATE_COLOURS).map((state) => ({
    type: "line", label: state, data: points.map((point) => point.counts?.[state] ?? null),
    borderColor: STATE_COLOURS[state], backgroundColor: STATE_COLOURS[state], tension: 0, spanGaps: true,
  }));
  return replaceChart(canvas, {
    type: "line",
    data: { labels: runLabels(points), datasets: states },
    options: { ...common(), scales: runScales("memories"),
      plugins: { legend: { position: "bottom" }, tooltip: { callbacks: { label: countLabel } } } },
  });
}

const DECISION_COLOURS = { merged: "#b07aa1", archived: "#edc948", deleted: "#9c755f" };

/** GET /consolidate/trends: what each real run did, in memories it merged, archived and deleted (on a scale of
 *  their own: a few deletions are not drawn against tens of thousands of memories); failures in its tooltip. */
export function drawDecisions(canvas, points) {
  return replaceChart(canvas, {
    type: "bar",
    data: {
      labels: runLabels(points),
      datasets: Object.entries(DECISION_COLOURS).map(([name, colour]) => ({
        label: `${name} in the run`, data: points.map((point) => point[name]), backgroundColor: colour,
      })),
    },
    options: {
      ...common(), scales: runScales("memories changed"),
      plugins: { legend: { position: "bottom" }, tooltip: { callbacks: { label: countLabel,
        footer: ([item]) => (item && points[item.dataIndex].failures
          ? `${count(points[item.dataIndex].failures)} task(s) failed` : "") } } },
    },
  });
}

function countLabel(item) {
  return `${item.dataset.label}: ${count(item.raw)}`;
}

/** A category axis of runs (one label each, none at the chart's very edge) over a y-axis of counts named by
 *  `meaning`. */
function runScales(meaning) {
  return {
    x: { offset: true, title: { display: true, text: "run started (UTC)" } },
    y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: meaning } },
  };
}

/** Each run's start as a label no other run shares: to the minute when that tells them apart, else to the
 *  second or the millisecond; runs started at the same moment are numbered. */
function runLabels(points) {
  const moments = points.map((point) => {
    const moment = new Date(point.started_at ?? NaN);
    return Number.isNaN(moment.getTime()) ? "????-??-??T??:??:??.???" : moment.toISOString();
  });
  for (const end of [16, 19, 23]) {
    const labels = moments.map((iso) => iso.slice(5, end).replace("T", " "));
    if (new Set(labels).size === labels.length) return labels;
  }
  return moments.map((iso, index) => `${iso.slice(5, 23).replace("T", " ")} #${index + 1}`);
}

/** The relevance histogram: one bar per bucket of the route's answer. */
export function drawRelevance(canvas, histogram) {
  return replaceChart(canvas, {
    type: "bar",
    data: {
      labels: histogram.buckets.map(bucketLabel),
      datasets: [{
        label: "memories", data: histogram.buckets.map((bucket) => bucket.count),
        backgroundColor: "#59a14f", barPercentage: 1, categoryPercentage: 0.95,
      }],
    },
    options: {
      ...common(),
      scales: { y: { beginAtZero: true, ticks: { precision: 0 } }, x: { title: { display: true, text: "relevance" } } },
      plugins: { legend: { display: false } },
    },
  });
}

export function bucketLabel(bucket) {
  const tenths = (bucket.high - bucket.low) * 10;
  const digits = Math.abs(tenths - Math.round(tenths)) < 1e-6 ? 1 : 2; // 0.0–0.1 for tenths, else 0.05–0.10
  return `${bucket.low.toFixed(digits)}–${bucket.high.toFixed(digits)}`;
}

function common() {
  // No animation: a chart is complete as soon as it is drawn (for people, screenshots and tests alike).
  return { animation: false, responsive: true, maintainAspectRatio: false };
}

/** A linear axis of epoch milliseconds spanning `moments` (a bar chart would otherwise start it at 0, 1970).
 *  Its ticks are evenly spaced (the axis's own ends are no ticks) and written as precisely as their spacing
 *  needs, so no two read the same. */
function timeAxis(moments) {
  const axis = { type: "linear", beginAtZero: false, title: { display: true, text: "time (UTC)" } };
  if (!moments.length) return axis;
  const first = Math.min(...moments);
  const last = Math.max(...moments);
  const margin = Math.max((last - first) * 0.05, 500);
  const withDate = last - first > 86400000; // within a day the time of day says enough
  return {
    ...axis, min: first - margin, max: last + margin,
    ticks: { maxTicksLimit: 7, includeBounds: false, callback: (value, index, ticks) =>
      timeTick(value, ticks.length > 1 ? ticks[1].value - ticks[0].value : 60000, withDate) },
  };
}

/** Epoch milliseconds to the minute, second or millisecond: the coarsest that ticks `step` apart tell apart. */
function timeTick(value, step, withDate) {
  const end = step >= 60000 ? 16 : step >= 1000 ? 19 : 23;
  return new Date(value).toISOString().slice(withDate ? 5 : 11, end).replace("T", " ");
}

function replaceChart(canvas, config) {
  window.Chart.getChart(canvas)?.destroy();
  return new window.Chart(canvas, config);
}
