// Memories: one memory found and opened (its history, merges into it included; its Supersede and Forget
// buttons come from updates.js), the relevance histogram, clusters, merges, supersessions, the proposals to review
// (accept or reject), graph vs Qdrant drift, and the archived, merged and deleted memories with their restore
// buttons.

import { get, post } from "./api.js";
import { bucketLabel, drawRelevance } from "./charts.js";
import { el, fillFacts, fillRows, memoryCell, notify, shortId, when } from "./dom.js";
import { count, relevance } from "./format.js";
import { Pager } from "./pager.js";
import { showActions } from "./updates.js";

const $ = (id) => document.getElementById(id);
const pagerFor = (name) => document.querySelector(`.pager[data-for="${name}"]`);
const PAGE = 10;
const BINS = 10;

let restorableKind = ""; // "": every kind in one list (archived, merged, deleted), as the route answers without one
// A memory's events as its history table words them (the others read as the route names them).
const EVENTS = { merged: "merged into another", "merged in": "a duplicate merged into it",
  "merge undone": "that duplicate restored" };
let onRestored = () => {};

export function setUp(restored) {
  onRestored = restored;
  for (const tab of $("restorable-kinds").querySelectorAll("button")) {
    tab.addEventListener("click", () => {
      restorableKind = tab.dataset.kind;
      for (const other of $("restorable-kinds").querySelectorAll("button")) {
        other.setAttribute("aria-selected", String(other === tab));
      }
      $("restore-message").textContent = "";
      restorablePager.load(0);
    });
  }
  $("restorable-filter").addEventListener("submit", (event) => {
    event.preventDefault();
    restorablePager.load(0);
  });
  $("drift-check").addEventListener("click", checkDrift);
  $("lookup-form").addEventListener("submit", (event) => {
    event.preventDefault();
    lookUp($("lookup-id").value.trim());
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An id opens that memory; text lists the memories holding it, each to open. */
async function lookUp(query) {
  if (!query) return;
  if (UUID.test(query)) {
    await openMemory(query);
    return;
  }
  try {
    const found = await get("/memories/search", { q: query, limit: 20 });
    const table = $("found-table");
    fillRows(table, found.items, (memory) => [
      memoryCell(memory.memory_id, memory.content), memory.state, relevance(memory.relevance_score),
      el("button", { type: "button", className: "open-memory", dataset: { memoryId: memory.memory_id },
        text: "Open", onclick: () => openMemory(memory.memory_id) }),
    ], `no memory holds "${query}"`);
    table.hidden = false;
  } catch (error) {
    notify(`Could not search for ${query}: ${error.message}`, true);
  }
}

/** Open a memory from elsewhere on the page (a recalled one): its id in the lookup field, its view on screen. */
export async function revealMemory(memoryId) {
  $("lookup-id").value = memoryId;
  await openMemory(memoryId);
  $("lookup-form").scrollIntoView({ block: "start" });
}

/** One memory opened: its state (active, archived or merged, with held_until after a restore; deleted: the text
 *  its tombstone kept, when, why and until when it can be restored), its edges and its history by run. */
async function openMemory(memoryId) {
  const facts = $("lookup-facts");
  let detail;
  try {
    detail = await get(`/memories/${encodeURIComponent(memoryId)}/detail`);
    const memory = detail.memory;
    if (memory && memory.state === "deleted") { // opened through its tombstone: the text it kept, and until when
      fillFacts(facts, [["state", "deleted"], ["text", memory.content], ["deleted", when(memory.deleted_at)],
                        ["why", memory.reason ?? "–"], ["restorable until", when(memory.restorable_until)]]);
    } else if (memory) {
      fillFacts(facts, [
        ["state", memory.state], ["text", memory.content], ["relevance", relevance(memory.relevance_score)],
        ["merged into", memory.merged_into ?? "–"], ["superseded by", memory.superseded_by ?? "–"],
        ["held until", memory.held_until ? when(memory.held_until) : "–"],
      ]);
    } else {
      const gone = await get(`/memory/${encodeURIComponent(memoryId)}`).catch((error) => error.body);
      fillFacts(facts, [["state", gone.state], ["deleted", when(gone.deleted_at)], ["why", gone.reason ?? "–"],
                        ["restorable until", when(gone.restorable_until)]]);
    }
  } catch (error) {
    notify(`Could not open ${memoryId}: ${error.message}`, true);
    return;
  }
  facts.hidden = false;
  showActions(memoryId, detail.memory, () => openMemory(memoryId));
  fillRows($("edges-table"), detail.edges, (edge) => [
    `${edge.outgoing ? "→" : "←"} ${edge.relation}`, memoryCell(edge.other_id, edge.other_content),
    [edge.kind, edge.reason].filter(Boolean).join(": "),
  ], "no edges");
  fillRows($("events-table"), detail.events, (event) => [
    when(event.at), EVENTS[event.event] ?? event.event, eventDetail(event), event.run_id ? shortId(event.run_id) : "–",
  ], "nothing happened to it yet");
  $("edges-table").hidden = $("events-table").hidden = false;
}

/** An event's detail: the other memory of a merge by its text (with the merge's reason), else the route's words. */
function eventDetail(event) {
  if (!event.other_id) return event.detail;
  if (event.event === "merged") return el("span", {}, "into ", memoryCell(event.other_id, event.other_content));
  return el("div", {}, memoryCell(event.other_id, event.other_content),
    el("div", { className: "muted", text: event.detail ?? "" }));
}

export async function loadRelevance() {
  const histogram = await get("/memories/relevance-histogram", { bins: BINS });
  $("relevance-summary").textContent =
    `${count(histogram.scored)} active memories by their stored relevance` +
    (histogram.unscored ? `; ${count(histogram.unscored)} not scored yet.` : ".");
  drawRelevance($("relevance-chart"), histogram);
  fillRows($("relevance-table"), histogram.buckets, (bucket) => [bucketLabel(bucket), count(bucket.count)]);
}

/** Counts of both stores, from GET /consolidate/status. */
export function showStoreCounts(counts) {
  fillFacts($("drift-counts"), [
    ["memories in the graph", count(counts.graph_memories)],
    ["points in Qdrant", count(counts.vector_points)],
    ["in step", counts.in_sync ? "yes" : `no (difference ${count(counts.difference)})`],
  ]);
}

async function checkDrift() {
  const result = $("drift-result");
  result.textContent = "Comparing the stores…";
  try {
    const drift = await post("/reconcile", { repair: false });
    result.replaceChildren(
      el("p", { text: `${drift.nodes_without_vectors_total} memories without a vector, ` +
        `${drift.vectors_without_nodes_total} vectors without a memory (nothing repaired).` }),
      ...drift.nodes_without_vectors.map((id) => el("div", {}, "no vector: ", el("code", { text: id }))),
      ...drift.vectors_without_nodes.map((id) => el("div", {}, "no memory: ", el("code", { text: id }))),
    );
  } catch (error) {
    result.textContent = "";
    notify(`Could not compare the stores: ${error.message}`, true);
  }
}

const clustersPager = new Pager(pagerFor("clusters"), PAGE, (limit, offset) => get("/clusters", { limit, offset }),
  (page) => fillRows($("clusters-table"), page.items, (cluster) => [
    cluster.summary, count(cluster.size), cluster.dominant_type, cluster.summary_method, when(cluster.updated_at),
  ], "no clusters yet"));

const mergesPager = new Pager(pagerFor("merges"), PAGE, (limit, offset) => get("/hygiene/merges", { limit, offset }),
  (page) => fillRows($("merges-table"), page.items, (merge) => [
    memoryCell(merge.duplicate_id, merge.duplicate_content),
    memoryCell(merge.canonical_id, merge.canonical_content),
    merge.similarity === null ? null : merge.similarity.toFixed(3),
    merge.reason,
    merge.state === "restored" ? `restored ${when(merge.restored_at)}`
      : merge.state === "deleted" ? `deleted with its canonical ${when(merge.deleted_at)}`
      : `${merge.state} ${when(merge.merged_at)}`,
  ], "no merges yet"));

const supersessionsPager = new Pager(pagerFor("supersessions"), PAGE,
  (limit, offset) => get("/hygiene/supersessions", { limit, offset }),
  (page) => fillRows($("supersessions-table"), page.items, (link) => [
    memoryCell(link.newer_id, link.newer_content),
    memoryCell(link.older_id, link.older_content),
    link.confidence, link.reason, when(link.detected_at),
  ], "no supersessions yet"));

const proposalsPager = new Pager(pagerFor("proposals"), PAGE,
  (limit, offset) => get("/hygiene/proposals", { limit, offset }),
  (page) => fillRows($("proposals-table"), page.items, (proposal) => [
    memoryCell(proposal.newer_id, proposal.newer_content),
    memoryCell(proposal.older_id, proposal.older_content),
    proposal.reason, when(proposal.proposed_at),
    el("span", {},
      el("button", { type: "button", className: "accept", text: "Accept", onclick: () => decide(proposal, "accept") }),
      el("button", { type: "button", className: "reject", text: "Reject", onclick: () => decide(proposal, "reject") })),
  ], "nothing to review"));

/** Accept (the older memory is superseded) or reject (both stay) one proposal. */
async function decide(proposal, verdict) {
  const what = verdict === "accept" ? "Accept: the older memory is superseded and leaves recall"
    : "Reject: both memories stay as they are";
  if (!window.confirm(`${what}?`)) return;
  try {
    const answer = await post(`/hygiene/proposals/${encodeURIComponent(proposal.id)}/${verdict}`);
    $("proposal-message").textContent = `Proposal ${shortId(answer.id)} ${answer.state}.`;
    onRestored();
  } catch (error) {
    notify(`Could not ${verdict} the proposal: ${error.message}`, true);
  }
}

/** The restorable lists' text filter, as query parameters (none while the box is empty). */
function restorableText() {
  const text = $("restorable-q").value.trim();
  return text ? { q: text } : {};
}

const restorablePager = new Pager(pagerFor("restorable"), PAGE,
  (limit, offset) => get("/memories/restorable", { ...(restorableKind ? { kind: restorableKind } : {}), limit, offset,
    ...restorableText() }),
  (page) => fillRows($("restorable-table"), page.items, (memory) => [
    memoryCell(memory.memory_id, memory.content),
    memory.kind,
    memory.type,
    when(memory.since),
    memory.reason,
    relevance(memory.relevance_score),
    el("button", { type: "button", className: "restore", dataset: { memoryId: memory.memory_id }, text: "Restore",
      onclick: () => restore(memory) }),
  ], `no ${restorableKind || "archived, merged or deleted"} memories`));

async function restore(memory) {
  const outcome = memory.kind === "deleted" ? "It comes back as it was before its deletion, with what left with it."
    : "It becomes active again.";
  if (!window.confirm(`Restore memory ${shortId(memory.memory_id)} (${memory.kind})? ${outcome}`)) return;
  try {
    const restored = await post(`/memory/${encodeURIComponent(memory.memory_id)}/restore`);
    $("restore-message").textContent =
      `Restored ${shortId(restored.memory_id)} from its ${restored.restored_from}` +
      (restored.edges_restored ? ` with ${restored.edges_restored} edges` : "") +
      (restored.restored_with?.length ? ` and ${restored.restored_with.length} memories deleted with it` : "") +
      `: ${restored.state}` + (restored.state === "merged" ? ` into ${shortId(restored.canonical_id)}` : "") +
      `, held until ${when(restored.held_until)}.`;
    onRestored();
  } catch (error) {
    notify(`Could not restore ${shortId(memory.memory_id)}: ${error.message}`, true);
  }
}

/** Every list on this side, each at its current page. */
export function loadLists() {
  return Promise.all([clustersPager.load(), mergesPager.load(), supersessionsPager.load(), proposalsPager.load(),
    restorablePager.load(), loadRelevance()]);
}
