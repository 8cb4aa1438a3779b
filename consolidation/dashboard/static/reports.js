// A task's report as people read it: its numbers as labelled facts, each listed item as the memories it names
// and a sentence saying why, and the report's raw JSON one click away.

import { el, memoryCell } from "./dom.js";
import { count, label, valueOf } from "./format.js";

// The fields of a report item that name memories: shown as the memories' texts, each under its role.
const ID_FIELDS = ["into", "duplicates", "newer", "older", "a", "b", "from", "to", "memory_id", "member_ids",
  "first", "second"];
const ROLES = { into: "kept", duplicates: "merged into it", newer: "newer", older: "older", a: "one", b: "other",
  from: "from", to: "to", memory_id: "memory", member_ids: "member", first: "first", second: "second" };
// Report fields the facts leave out: said by the heading or the failure, or too deep to read (raw JSON has them).
const NOT_FACTS = ["success", "error", "cancelled"];

/** The report's own numbers and words as a list of facts (a failed task: why it failed). */
export function reportFacts(report) {
  if (report.success === false) {
    return el("p", { className: "error", text: `${report.cancelled ? "Cancelled" : "Failed"}: ${report.error ?? ""}` });
  }
  const facts = el("dl", { className: "facts report-facts" });
  for (const [field, value] of Object.entries(report)) {
    const shown = NOT_FACTS.includes(field) ? null : factValue(field, value);
    if (shown !== null) facts.append(el("dt", { text: label(field) }), el("dd", { text: shown }));
  }
  return facts;
}

/** A value as one fact: a flat object of numbers (a distribution) as "high 23 · low 4"; deeper ones: none. */
function factValue(field, value) {
  if (value === null || typeof value !== "object") return valueOf(field, value);
  const entries = Object.entries(value);
  if (!entries.length) return "none";
  if (entries.some(([, inner]) => inner !== null && typeof inner === "object")) return null;
  return entries.map(([name, inner]) => `${label(name)} ${valueOf(name, inner)}`).join(" · ");
}

/** A list's heading: its name in words and how many it holds (and how many its pager reaches, when the report
 * kept fewer: a sample, or an older run past the service's CONSOLIDATION_REPORT_KEPT_BYTES). */
export function listHeading(name, listed) {
  const shown = listed.total > listed.kept ? `, ${count(listed.kept)} kept` : "";
  return el("h4", { text: `${label(name)} (${count(listed.total)}${shown})` });
}

/** The memories an item names, each by its role and its text. */
export function itemMemories(item, texts) {
  const cell = el("div");
  for (const field of ID_FIELDS) {
    for (const id of [].concat(item[field] ?? [])) {
      if (typeof id === "string") {
        cell.append(el("div", {}, `${ROLES[field]}: `, memoryCell(id, texts[id] ?? item.content)));
      }
    }
  }
  return cell;
}

/** What an item says besides its memories: why, as a sentence, then its other fields (those it has) as labelled
 *  values. */
export function itemDetails(item) {
  const fields = Object.entries(item).filter(([field, value]) => !ID_FIELDS.includes(field) && field !== "content"
    && field !== "reason" && value !== null && typeof value !== "object");
  return el("div", {},
    item.reason ? el("div", { className: "reason", text: sentence(item.reason) }) : null,
    fields.length ? el("div", { className: "muted",
      text: fields.map(([field, value]) => `${label(field)}: ${valueOf(field, value)}`).join(" · ") }) : null);
}

function sentence(reason) {
  const text = String(reason).trim();
  return text.charAt(0).toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? "" : ".");
}

/** The answer as the service gave it, folded: every field, nothing reworded. */
export function rawJson(answer) {
  return el("details", { className: "raw-json" }, el("summary", { text: "raw JSON" }),
    el("pre", { text: JSON.stringify(answer, null, 2) }));
}
