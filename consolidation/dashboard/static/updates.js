// Updates and forgetting on request: on the memory opened, Supersede (by a new text or an existing memory, with
// Undo) and Forget; and Purge, every memory holding an identifier, only after a dry run has listed them.

import { get, post, remove } from "./api.js";
import { el, fillRows, memoryCell, notify, shortId, show, text, when } from "./dom.js";

const $ = (id) => document.getElementById(id);
const SUMMARY_TYPE = "MetaPattern"; // cluster summaries: rebuilt from their members, never superseded by hand
const PREVIEW_TEXTS = 10; // purge preview: how many memories its first page lists with their text

let onChanged = () => {};
let actionsFor = null; // the memory whose buttons (and the answers to them) are shown
let previewed = null; // the purge dry run whose memories the Purge button would delete

/** `changed()` reloads the page's lists after a request changed memories. */
export function setUp(changed) {
  onChanged = changed;
  $("purge-form").addEventListener("submit", (event) => {
    event.preventDefault();
    previewPurge($("purge-match").value.trim());
  });
  // Purge deletes what the preview listed: another identifier typed in needs its own preview first.
  $("purge-match").addEventListener("input", () => showPurgePreview(null));
  $("purge-run").addEventListener("click", runPurge);
  $("purge-count").addEventListener("change", () => {
    $("purge-run").disabled = !$("purge-count").checked;
  });
}

// --- one memory: supersede, undo, forget -------------------------------------------------------------------

/** The buttons for the memory opened (`memory`: GET /memory's fields, null when it is deleted); `reopen()`
 *  shows it again after a request changed it. */
export function showActions(memoryId, memory, reopen) {
  if (memoryId !== actionsFor) {
    setAnswer();
    $("supersede-form")?.remove();
  }
  actionsFor = memoryId;
  const actions = $("memory-actions");
  actions.replaceChildren();
  if (!memory || memory.state !== "active") {
    show(actions, false);
    return;
  }
  const done = () => { reopen(); onChanged(); };
  if (memory.superseded_by) {
    actions.append(el("span", { className: "muted" }, "Superseded by ",
      el("code", { title: memory.superseded_by, text: shortId(memory.superseded_by) }),
      ": supersede the newest memory of its chain. "));
  } else if (memory.type !== SUMMARY_TYPE) {
    actions.append(el("button", { type: "button", id: "supersede-open", text: "Supersede…",
      onclick: () => openSupersedeForm(memory, done) }), " ");
  }
  actions.append(el("button", { type: "button", id: "forget-memory", className: "danger", text: "Forget",
    onclick: () => forget(memory, done) }));
  show(actions, true);
}

/** The newer memory: a new text (stored with this memory's type and scope) or the id of an existing one. */
function openSupersedeForm(memory, done) {
  const content = el("textarea", { name: "content", rows: "2", spellcheck: "true" });
  const by = el("input", { name: "by", size: "38", autocomplete: "off", spellcheck: "false" });
  const send = el("button", { type: "submit", className: "danger", text: "Supersede" });
  // One key per form: sending the same form again (a lost answer, a second click) never makes a second memory.
  const key = randomKey();
  const form = el("form", { id: "supersede-form", className: "supersede" },
    el("label", {}, "The new text", content),
    el("label", {}, "or the id of an existing, newer memory", by),
    send, " ", el("button", { type: "button", text: "Cancel", onclick: () => form.remove() }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const newer = content.value.trim();
    const existing = by.value.trim();
    if (Boolean(newer) === Boolean(existing)) {
      setAnswer(el("span", { className: "error", text: "Give the new text or a memory id (one of the two)." }));
      return;
    }
    const what = newer ? `a new memory: "${newer}"` : `memory ${existing}`;
    if (!window.confirm(`Supersede memory ${shortId(memory.id)} by ${what}? Recall then answers the newer one in ` +
      "its place; Undo brings it back.")) return;
    send.disabled = true;
    try {
      const answer = await post(`/memory/${encodeURIComponent(memory.id)}/supersede`,
        newer ? { content: newer, type: memory.type } : { by: existing }, { "Idempotency-Key": key });
      form.remove();
      await showSuperseded(answer, done);
      done();
    } catch (error) {
      setAnswer(el("span", { className: "error", text: `Could not supersede: ${error.message}` }));
    } finally {
      send.disabled = false;
    }
  });
  $("supersede-form")?.remove();
  $("memory-actions").after(form);
  content.focus();
}

async function showSuperseded(answer, done) {
  const survivors = await textsOf(answer.survivors);
  setAnswer(
    el("p", {}, `Superseded ${shortId(answer.memory_id)} by `, answer.created ? "the new memory " : "memory ",
      el("code", { className: "newer", title: answer.superseded_by, text: shortId(answer.superseded_by) }),
      answer.repeated ? " (asked before with this form: nothing was done twice)." : "."),
    survivors.length ? el("p", {}, "Its other facts stand as memories of their own:") : null,
    survivors.length ? el("ul", { className: "survivors" },
      ...survivors.map(([id, content]) => el("li", {}, memoryCell(id, content)))) : null,
    el("p", {}, el("button", { type: "button", id: "supersede-undo", text: "Undo",
      onclick: () => undo(answer, survivors.length, done) })),
  );
}

async function undo(superseded, survivorCount, done) {
  const made = [superseded.created ? "the new memory" : null, survivorCount ? `${survivorCount} survivor(s)` : null]
    .filter(Boolean);
  if (!window.confirm(`Undo the supersession of ${shortId(superseded.memory_id)}? It becomes current again` +
    (made.length ? `; ${made.join(" and ")} made by it are forgotten (restorable).` : "."))) return;
  try {
    const answer = await post(`/memory/${encodeURIComponent(superseded.memory_id)}/supersede/undo`);
    setAnswer(el("p", {}, `Undone: ${shortId(answer.memory_id)} is ${answer.state ?? "gone"} and current again.`,
      answer.forgotten.length ? " Forgotten, and restorable under Deleted: " : "",
      ...answer.forgotten.flatMap((id, index) => [index ? ", " : "", el("code", { title: id, text: shortId(id) })])));
    done();
  } catch (error) {
    setAnswer(el("span", { className: "error", text: `Could not undo: ${error.message}` }));
  }
}

async function forget(memory, done) {
  if (!window.confirm(`Forget memory ${shortId(memory.id)}? It is deleted; its tombstone keeps it restorable ` +
    "for the retention period.")) return;
  try {
    const answer = await remove(`/memory/${encodeURIComponent(memory.id)}`);
    setAnswer(el("p", {}, `Forgotten ${shortId(answer.memory_id)} at ${when(answer.deleted_at)}: restorable ` +
      "(Deleted, below) until the date shown above."));
    done();
  } catch (error) {
    setAnswer(el("span", { className: "error", text: `Could not forget: ${error.message}` }));
  }
}

function setAnswer(...nodes) {
  $("memory-request").replaceChildren(...nodes.filter(Boolean));
}

// --- purge ----------------------------------------------------------------------------------------------

async function previewPurge(match) {
  if (!match) return;
  try {
    const answer = await post("/memories/purge", { match, dry_run: true, limit: PREVIEW_TEXTS });
    showPurgePreview({ match, answer });
  } catch (error) {
    showPurgePreview(null);
    notify(`Could not preview the purge: ${error.message}`, true);
  }
}

/** The dry run's answer (null: none shown): how many, the first page with their text and true state, the rest
 *  by id; why the purge would be refused as asked, and the box that confirms the count then. */
function showPurgePreview(preview) {
  previewed = preview;
  $("purge-result").replaceChildren();
  const summary = $("purge-summary");
  if (!preview) {
    summary.textContent = "";
    for (const id of ["purge-table", "purge-more", "purge-confirm", "purge-refused"]) show($(id), false);
    return;
  }
  const { match, answer } = preview;
  const quoting = answer.summaries_quoting ?? 0;
  summary.textContent = (answer.matched ? `${answer.matched} memories hold "${match}": a purge deletes them.`
    : `No memory holds "${match}".`) +
    (quoting ? ` ${quoting} cluster summaries quote it: rebuilt without them, and deleted if they still quote it.`
      : "");
  const listed = answer.memories ?? [];
  fillRows($("purge-table"), listed, (memory) => [
    memoryCell(memory.id, memory.content), memory.type, memory.state + (memory.says_more ? ", says more" : ""),
  ]);
  show($("purge-table"), listed.length > 0);
  const shown = new Set(listed.map((memory) => memory.id));
  const rest = answer.memory_ids.filter((id) => !shown.has(id));
  const unlisted = answer.matched - answer.memory_ids.length;
  $("purge-more").replaceChildren(...(rest.length ? [text("and "), ...rest.flatMap((id, index) =>
    [index ? ", " : "", el("code", { title: id, text: shortId(id) })])] : []),
    unlisted > 0 ? text(`, and ${unlisted} more (the preview lists the first ${answer.memory_ids.length})`) : "");
  show($("purge-more"), rest.length > 0 || unlisted > 0);
  $("purge-refused").textContent = answer.refused ? `As asked, the purge is refused: ${answer.refused}` : "";
  show($("purge-refused"), Boolean(answer.refused));
  show($("purge-count-label"), Boolean(answer.refused));
  for (const box of ["purge-erase", "purge-redact", "purge-count"]) $(box).checked = false;
  $("purge-run").textContent = `Purge ${answer.matched}`;
  $("purge-run").disabled = Boolean(answer.refused);
  show($("purge-confirm"), answer.matched > 0 || quoting > 0);
}

async function runPurge() {
  if (!previewed) return;
  const { match, answer: preview } = previewed;
  const erase = $("purge-erase").checked;
  const redact = $("purge-redact").checked;
  const quoting = preview.summaries_quoting ? ` (and rebuild the ${preview.summaries_quoting} summaries quoting it)` : "";
  if (!window.confirm(`Purge ${preview.matched} memories holding "${match}"${quoting}? They are ` +
    (redact ? "redacted where they say more, else deleted" : "deleted") +
    (erase ? ", and their text erased from every place that kept it: they cannot be restored."
      : "; their tombstones keep them restorable."))) return;
  const body = { match, dry_run: false, erase, redact };
  if (preview.refused) body.expected_count = preview.matched;
  $("purge-run").disabled = true;
  try {
    const answer = await post("/memories/purge", body);
    showPurgePreview(null);
    $("purge-result").textContent = `Purged: ${answer.deleted} memories deleted` +
      (answer.redacted ? `, ${answer.redacted} redacted` : "") +
      (answer.summaries_deleted ? ` (${answer.summaries_deleted} of them summaries that still quoted it)` : "") +
      (answer.erase ? ", their text erased." : ", restorable under Deleted.");
    onChanged();
  } catch (error) {
    notify(`Could not purge: ${error.message}`, true);
  } finally {
    $("purge-run").disabled = false;
  }
}

// --- helpers --------------------------------------------------------------------------------------------

/** [id, memory or null] for each id, read with GET /memory (a few at most: one call each). */
function memoriesOf(ids) {
  return Promise.all(ids.map(async (id) => [id,
    (await get(`/memory/${encodeURIComponent(id)}`).catch(() => null))?.memory ?? null]));
}

async function textsOf(ids) {
  return (await memoriesOf(ids)).map(([id, memory]) => [id, memory?.content]);
}

/** 128 random bits as hex: crypto.randomUUID is offered on https and localhost only, this everywhere. */
function randomKey() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0"))
    .join("");
}
