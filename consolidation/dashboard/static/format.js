// Numbers as people read them: counts with their thousands grouped, scores without exponents, durations in ms,
// s or min, times as the rest of the page writes them, and the service's snake_case field names as words.

import { when } from "./dom.js";

const GROUPED = new Intl.NumberFormat("en-US", { maximumFractionDigits: 3 });
// Fields whose numbers are scores in 0..1 (shown to a fixed number of decimals) or durations in seconds.
const SCORES = ["relevance", "relevance_score", "similarity", "confidence", "average_before", "average_after"];
const DURATIONS = ["seconds", "elapsed_seconds", "duration_seconds"];
// Field names that read better said another way than their words.
const LABELS = {
  pass: "pass", pass_reason: "why this pass", memories_processed: "memories looked at",
  capped_again: "scores capped again", average_before: "average relevance before",
  average_after: "average relevance after", merged: "duplicates merged", merges_total: "merges",
  supersessions_total: "supersessions", contradictions_total: "contradictions", kept_apart_total: "kept apart",
  edges_total: "associations", retired_total: "clusters retired", clusters_total: "clusters",
  deleted_with_canonical: "deleted with their canonical", decisions_total: "decisions",
  protections_total: "protections", seconds: "took", member_ids_total: "members", meta_pattern_id: "cluster",
  action: "decision",
};

const missing = (value) => value === null || value === undefined || Number.isNaN(Number(value));

/** A count: 40000 reads "40,000". */
export function count(value) {
  return missing(value) ? "–" : GROUPED.format(Number(value));
}

/** A score in 0..1 (relevance, similarity, confidence) to `digits` decimals. A positive score too small to show
 *  at that precision reads "<0.0001" (for 4 digits), never "2.2556e-8" nor a misleading "0.0000". */
export function score(value, digits = 3) {
  if (missing(value)) return "–";
  const number = Number(value);
  if (number === 0) return "0"; // exactly nothing, not a rounded "0.0000"
  const smallest = 10 ** -digits;
  return number > 0 && number < smallest ? `<${smallest.toFixed(digits)}` : number.toFixed(digits);
}

/** A relevance, as every list of the page shows it: 4 decimals. */
export function relevance(value) {
  return score(value, 4);
}

/** Seconds as a duration: "<1 ms", "850 ms", "4.2 s", "3 min 5 s". */
export function duration(seconds) {
  if (missing(seconds)) return "–";
  const value = Number(seconds);
  if (value === 0) return "0 ms";
  if (value < 0.001) return "<1 ms";
  if (value < 1) return `${Math.round(value * 1000)} ms`;
  if (value < 60) return `${value.toFixed(1)} s`;
  const minutes = Math.floor(value / 60);
  return `${count(minutes)} min ${Math.round(value - minutes * 60)} s`;
}

/** Any number a report holds, by its field's meaning: a score, a duration, or a count (a fraction to at most
 *  3 decimals, a tiny one as "<0.001"). */
export function numberOf(field, value) {
  if (SCORES.includes(field)) return score(value, field.startsWith("relevance") ? 4 : 3);
  if (DURATIONS.includes(field)) return duration(value);
  const number = Number(value);
  return number !== 0 && Math.abs(number) < 0.001 ? "<0.001" : count(number);
}

/** A field's name in words: "memories_processed" reads "memories looked at", "kept_apart" "kept apart". */
export function label(field) {
  return LABELS[field] ?? field.replace(/_total$/, "").replaceAll("_", " ");
}

/** A value of a report for people: a number by its field's meaning, true/false as yes/no, a time (a field named
 *  …_at or …_until) as "YYYY-MM-DD HH:MM:SS UTC", other text as it is. */
export function valueOf(field, value) {
  if (typeof value === "number") return numberOf(field, value);
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "string" && /_(at|until)$/.test(field)) return when(value);
  return value === null || value === undefined ? "–" : String(value);
}
