// Recall: what the agent would recall for a query, asked twice (POST /recall): `current`, what is true now, and
// `history`, every stored hit as it is, side by side, so the effect of a supersession shows at a glance.

import { post } from "./api.js";
import { el, memoryCell, notify, shortId, text } from "./dom.js";
import { relevance } from "./format.js";

const $ = (id) => document.getElementById(id);
let latest = 0;
let openMemory = () => {};

/** `open(memoryId)` shows a recalled memory in the memory view, where it can be superseded or forgotten. */
export function setUp(open) {
  openMemory = open;
  $("recall-form").addEventListener("submit", (event) => {
    event.preventDefault();
    recall($("recall-query").value.trim(), Number($("recall-k").value));
  });
}

async function recall(query, k) {
  if (!query) return;
  const ticket = ++latest;
  const lists = [$("recall-current-hits"), $("recall-history-hits")];
  for (const list of lists) list.setAttribute("aria-busy", "true");
  try {
    const [current, history] = await Promise.all(["current", "history"].map((state) =>
      post("/recall", { query, k, state })));
    // A slow answer to an earlier query must not replace the answer to the one asked last.
    if (ticket !== latest) return;
    const recalledTexts = new Map(history.results.map((hit) => [hit.id, hit.content]));
    showHits(lists[0], current.results, (hit) => replacesLine(hit, recalledTexts));
    showHits(lists[1], history.results, historyLine);
    $("recall-asked").textContent = `Asked for the ${k} memories nearest to "${query}":`;
  } catch (error) {
    if (ticket === latest) notify(`Could not recall: ${error.message}`, true);
  } finally {
    if (ticket === latest) for (const list of lists) list.removeAttribute("aria-busy");
  }
}

/** One item per hit: its text, then type, similarity, relevance and state, then what only this mode says. */
function showHits(list, hits, extraLine) {
  list.replaceChildren();
  if (!hits.length) {
    list.append(el("li", { className: "empty muted", text: "nothing recalled" }));
    return;
  }
  for (const hit of hits) {
    list.append(el("li", { className: hit.superseded ? "hit superseded" : "hit", dataset: { memoryId: hit.id } },
      el("div", {}, memoryCell(hit.id, hit.content)),
      el("div", { className: "muted" }, text(factsOf(hit)), " ",
        el("button", { type: "button", className: "open-memory", text: "Open", onclick: () => openMemory(hit.id) })),
      extraLine(hit)));
  }
}

function factsOf(hit) {
  const facts = [hit.type, `similarity ${hit.similarity.toFixed(3)}`,
    `relevance ${relevance(hit.relevance)}`, hit.state];
  // In current mode a memory standing in for a superseded hit is ranked where that hit ranked.
  if (hit.ranked_by_similarity !== null && hit.ranked_by_similarity !== undefined
      && hit.ranked_by_similarity !== hit.similarity) {
    facts.push(`ranked at ${hit.ranked_by_similarity.toFixed(3)} for what it replaces`);
  }
  return facts.join(" · ");
}

/** Current mode: the superseded hits this memory answers for, with their text when history recalled them too. */
function replacesLine(hit, recalledTexts) {
  if (!hit.replaces || !hit.replaces.length) return null;
  return el("div", { className: "replaces" }, "replaces ",
    ...hit.replaces.flatMap((id, index) => [index ? "; " : "",
      recalledTexts.has(id) ? memoryCell(id, recalledTexts.get(id)) : el("code", { title: id, text: shortId(id) })]));
}

/** History mode: what became of a hit that is no longer current. */
function historyLine(hit) {
  const marks = [];
  if (hit.superseded_by) marks.push(["superseded by ", hit.superseded_by]);
  if (hit.merged_into) marks.push(["merged into ", hit.merged_into]);
  if (!marks.length) return hit.superseded ? el("div", { className: "replaces", text: "superseded" }) : null;
  return el("div", { className: "replaces" }, ...marks.flatMap(([label, id], index) =>
    [index ? "; " : "", label, el("code", { title: id, text: shortId(id) })]));
}
