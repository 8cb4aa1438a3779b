// The page: sign in with the admin token, then keep the status fresh and load every panel from the JSON routes.

import { ApiError, get, setGraph, signIn, signOut, signedIn } from "./api.js";
import { notify, show } from "./dom.js";
import * as memories from "./memories.js";
import * as recall from "./recall.js";
import * as runs from "./runs.js";
import * as updates from "./updates.js";

const $ = (id) => document.getElementById(id);
const STATUS_EVERY_MS = 2000;
let statusTimer = null;
let runWasGoing = false;

runs.setUp((run) => {
  if (run.dry_run && run.tasks.includes("forget")) runs.showForgetPreview(run);
  refreshAll();
});
memories.setUp(() => refreshAll());
recall.setUp((memoryId) => memories.revealMemory(memoryId));
updates.setUp(() => refreshAll());

$("sign-in-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("token");
  const candidate = input.value.trim();
  input.value = ""; // the token is not left in the page once it has been read
  const error = $("sign-in-error");
  show(error, false);
  try {
    enter(await onAGraph(await signIn(candidate)));
  } catch (failure) {
    error.textContent = failure instanceof ApiError && failure.status === 401
      ? "The service refused this token."
      : `Could not sign in: ${failure.message}`;
    show(error, true);
  }
});

$("sign-out").addEventListener("click", () => leave());
$("graph").addEventListener("change", async (event) => {
  setGraph(event.target.value);
  try {
    showStatus(await get("/consolidate/status"));
    refreshAll();
  } catch (error) {
    failed(error);
  }
});

/** With several graphs, offer them all; with no default graph, start on the first one. */
async function onAGraph(status) {
  const names = status.graphs.map((entry) => entry.graph);
  const picker = $("graph");
  picker.replaceChildren(...names.map((name) => new Option(name, name)));
  show($("graph-picker"), names.length > 1 || !status.graph);
  if (status.graph) {
    picker.value = status.graph;
    return status;
  }
  setGraph(names[0] ?? null);
  return names.length ? get("/consolidate/status") : status;
}
$("refresh").addEventListener("click", () => refreshAll());

function enter(status) {
  for (const id of ["dashboard", "sign-out", "refresh", "signed-in-as"]) show($(id), true);
  show($("sign-in"), false);
  showStatus(status);
  refreshAll();
  statusTimer = setInterval(pollStatus, STATUS_EVERY_MS);
}

function leave(message) {
  signOut();
  clearInterval(statusTimer);
  for (const id of ["dashboard", "sign-out", "refresh", "signed-in-as", "graph-picker"]) show($(id), false);
  show($("sign-in"), true);
  if (message) {
    $("sign-in-error").textContent = message;
    show($("sign-in-error"), true);
  }
}

function showStatus(status) {
  if (!status.graph) {
    notify("The service serves no graph yet: nothing to show.", true);
    return;
  }
  runs.showStatus(status);
  memories.showStoreCounts(status.store_counts);
  showAutomem(status.automem);
  showEmbedding(status.embedding);
}

/** Which model made the store's vectors and which one embeds texts now; when they differ, what that means. */
function showEmbedding(embedding) {
  const line = $("embedding-models");
  if (!embedding) {
    show(line, false);
    return;
  }
  const store = embedding.store_model + (embedding.store_model_known ? "" : " (assumed: no vector names its model)");
  let text = `Embedding model: store ${store} · configured ${embedding.configured_model}`;
  if (!embedding.matches) {
    text += embedding.reembed_in_progress_to
      ? ` · a reembed to ${embedding.reembed_in_progress_to} has not finished: text recall and text writes answer 409`
      : " · they differ: text recall and text writes answer 409 until `consolidation reembed` moves the store";
  }
  line.textContent = text;
  line.classList.toggle("mismatch", !embedding.matches);
  line.setAttribute("role", embedding.matches ? "status" : "alert");
  show(line, true);
}

/** A plain banner while AutoMem's own consolidation writes to the same graph, naming how to turn it off. */
function showAutomem(automem) {
  const banner = $("automem-warning");
  banner.textContent = automem?.warning ?? "";
  show(banner, Boolean(automem?.warning));
}

async function pollStatus() {
  if (!signedIn()) return;
  try {
    const status = await get("/consolidate/status");
    showStatus(status);
    const runIsGoing = Boolean(status.current_run);
    if (runWasGoing && !runIsGoing) refreshAll(); // a run (the scheduler's, or another client's) just ended
    runWasGoing = runIsGoing;
  } catch (error) {
    failed(error);
  }
}

/** Reload every panel; the status comes with the next poll. */
async function refreshAll() {
  try {
    await Promise.all([runs.loadHistory(), memories.loadLists(), runs.loadSettings()]);
    document.body.dataset.loaded = String(Date.now()); // for whoever waits on the page: everything is drawn
  } catch (error) {
    failed(error);
  }
}

function failed(error) {
  if (error instanceof ApiError && error.status === 401) {
    leave("The service no longer accepts this token; sign in again.");
  } else {
    notify(error.message, true);
  }
}
