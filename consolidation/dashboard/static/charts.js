// The three charts, drawn with the vendored Chart.js (window.Chart) from what the JSON routes answer.

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
        tooltip: { callbacks: { label: (item) => `${item.raw.y}: ${item.raw.seconds} s (run ${item.raw.run.slice(0, 8)})` } },
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
        tooltip: { callbacks: { label: (item) => `${item.dataset.label}: ${item.raw.y} s${item.raw.dry ? " (dry run)" : ""}` } },
      },
    },
  });
}

const STATE_COLOURS = { active: "#59a14f", archived: "#edc948", merged: "#f28e2b", deleted: "#e15759" };

/** GET /consolidate/trends: lines of how many memories are in each state after each real run, and bars of
 *  what each run merged and deleted. */
export function drawTrends(canvas, points) {
  const labels = points.map((point) => (point.started_at ?? "").slice(5, 16).replace("T", " "));
  const states = Object.keys(STATE_COLOURS).map((state) => ({
    type: "line", label: state, data: points.map((point) => point.counts?.[state] ?? null), yAxisID: "memories",
    borderColor: STATE_COLOURS[state], backgroundColor: STATE_COLOURS[state], tension: 0, spanGaps: true,
  }));
  const decisions = [["merged", "#b07aa1"], ["deleted", "#9c755f"], ["failures", "#ff0000"]].map(([name, colour]) => ({
    type: "bar", label: `${name} in the run`, data: points.map((point) => point[name]), yAxisID: "decisions",
    backgroundColor: colour,
  }));
  return replaceChart(canvas, {
    data: { labels, datasets: [...states, ...decisions] },
    options: {
      ...common(),
      scales: {
        memories: { position: "left", beginAtZero: true, title: { display: true, text: "memories" } },
        decisions: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, ticks: { precision: 0 } },
      },
      plugins: { legend: { position: "bottom" } },
    },
  });
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

/** A linear axis of epoch milliseconds spanning `moments` (a bar chart would otherwise start it at 0, 1970). */
function timeAxis(moments) {
  const axis = { type: "linear", beginAtZero: false, title: { display: true, text: "time (UTC)" } };
  if (!moments.length) return axis;
  const first = Math.min(...moments);
  const last = Math.max(...moments);
  const margin = Math.max((last - first) * 0.05, 500);
  // Within a day the time of day says enough; over longer spans the date comes first.
  const slice = last - first > 86400000 ? [5, 16] : [11, 19];
  return {
    ...axis, min: first - margin, max: last + margin,
    ticks: { maxTicksLimit: 7, callback: (value) => new Date(value).toISOString().slice(...slice).replace("T", " ") },
  };
}

function replaceChart(canvas, config) {
  window.Chart.getChart(canvas)?.destroy();
  return new window.Chart(canvas, config);
}
