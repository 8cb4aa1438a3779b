"""Clustering: group similar memories and keep one MetaPattern per cluster, stable across runs."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..clusters import ClusterMatch, match_clusters, subject_links
from ..hygiene.replacement import subject_key
from ..neighbours import fingerprints
from ..scoring import CANDIDATE_RELEVANCE, DEFAULT_IMPORTANCE, relevance_scores
from ..settings import Settings
from ..similarity import Pairs, clusters, normalized
from ..stores.graph import GraphStore, MetaPatternRecord
from ..stores.vectors import VectorPoint, payload_of
from ..subjects import UNREAD, KeptSubjects
from ..summaries import ClusterMember, type_mix
from ..timeutil import SECONDS_PER_DAY, epoch_seconds, to_iso
from .context import TaskContext, capped, positions_in

TASK = "cluster"
# Only the most central members' text is read for a summary: enough for its key terms and quotes.
SUMMARY_MEMBERS = 50
PRINT_CHUNK = 65536  # vectors fingerprinted at once (each chunk is a copy: 100 MB of 384-d rows)


@dataclass(frozen=True)
class Population:
    """Every active memory with a vector (ids, unit vectors, scope keys, change numbers: NaN never marked) and
    which are candidates clustering groups. Every one, not only the candidates: the same as dedup reads, so the
    store hands out its copy as it is (a subset would be a second copy of most vectors) and the kept graph
    serves without a check of what changed. Memories below the line take no part in any pair."""

    ids: list[str]
    unit: np.ndarray
    scope_keys: list[str]
    changes: np.ndarray
    candidate: np.ndarray


def population(ctx: TaskContext) -> Population:
    listed = ctx.graph.cluster_population(min_relevance(ctx.settings))
    ids, matrix = ctx.vectors.vectors(listed.ids)
    ctx.progress(0, len(ids))
    rows = positions_in(listed.ids, ids)
    if not rows.size:
        return Population([], normalized(matrix), [], np.zeros(0), np.zeros(0, dtype=bool))
    return Population(ids, normalized(matrix), [listed.scopes[r] for r in rows.tolist()], listed.changes[rows],
                      listed.candidate[rows])


def similar_pairs(ctx: TaskContext, memories: Population) -> Pairs:
    """The similar pairs among the candidates, within one scope (so no cluster, and no MetaPattern, spans two),
    from the kept similarity graph."""
    found = ctx.neighbours.pairs(memories.ids, memories.unit, ctx.settings.consolidation_cluster_similarity,
                                 ctx.progress, memories.scope_keys)
    if memories.candidate.all():  # with low relevance clustered, every memory is one: 23M pairs at a million
        return found
    among = memories.candidate[found.rows] & memories.candidate[found.cols]
    return Pairs(*(column[among] for column in found))


def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
    memories = population(ctx)
    return full_pass(ctx, dry_run, memories, similar_pairs(ctx, memories))


def full_pass(ctx: TaskContext, dry_run: bool, memories: Population, found: Pairs,
              stored: list[MetaPatternRecord] | None = None, subjects: Subjects | None = None) -> dict[str, Any]:
    """The clusters among every candidate, from their similar pairs `found`, settled with every MetaPattern
    (`stored`) and with the subjects known so far (`subjects`), when an incremental pass read them already."""
    ids, threshold = memories.ids, ctx.settings.consolidation_cluster_similarity
    rows, cols, similarities = found
    min_size = ctx.settings.consolidation_cluster_min_size
    # Only members of a component of the minimum size can be in a cluster once pairs are left out: only their
    # texts are read for their subjects.
    reach = clusters(len(ids), rows, cols, min_size)
    inside = np.zeros(len(ids), dtype=bool)
    inside[np.concatenate(reach) if reach else []] = True
    kept = inside[rows]  # (a pair's ends are in one component)
    rows, cols, similarities = rows[kept], cols[kept], similarities[kept]
    subjects = Subjects(ctx.graph, memories, ctx.subjects) if subjects is None else subjects
    linked = subject_links(subjects.of(rows), subjects.of(cols), similarities, threshold)
    subjects.keep(ctx)
    groups = clusters(len(ids), rows[linked], cols[linked], min_size)
    report = settle(ctx, dry_run, ids, memories.unit, groups, ctx.graph.meta_patterns() if stored is None else stored)
    settled_on_kept_graph(ctx, dry_run)
    return {"memories_processed": int(memories.candidate.sum()), "similar_pairs": int(linked.sum()), **report}


def settled_on_kept_graph(ctx: TaskContext, dry_run: bool) -> None:
    """Note that the clusters stored now were computed from the kept graph as it is: an incremental pass may
    start from them there (a dry run stores nothing; a run of one scope stored only that scope's)."""
    if not dry_run and ctx.graph.scoping.whole:
        ctx.neighbours.settle(TASK, ctx.change_counter)


def min_relevance(settings: Settings) -> float:
    """The relevance score a memory must be above to be clustered. A conversation's memories fall below the
    candidate line within three weeks unread; what the store holds about a subject is worth a summary whatever
    the age of its statements, so by default every current memory takes part."""
    return -1.0 if settings.consolidation_cluster_low_relevance else CANDIDATE_RELEVANCE


class Subjects:
    """Who each memory of a population is about (hygiene.replacement.subject_key, as a number; NOBODY: nobody),
    read from its text the first time it is asked for, unless this process kept it from a pass that read the
    memory with the change number and the vector it has now (subjects.KeptSubjects)."""

    def __init__(self, graph: GraphStore, memories: Population, kept: KeptSubjects):
        self.graph, self.ids, self.unit, self.changes, self.kept = (graph, memories.ids, memories.unit,
                                                                   memories.changes, kept)
        self.codes, self.kept_prints = kept.known(self.ids, self.changes)
        self.prints = np.zeros(len(self.ids), dtype=np.uint64)
        self.checked = np.zeros(len(self.ids), dtype=bool)  # its vector compared with the kept one, or read

    def of(self, positions: np.ndarray) -> np.ndarray:
        positions = np.asarray(positions, dtype=np.int64)
        unread = self._check(positions)
        if unread.size:
            texts = self.graph.memory_contents([self.ids[p] for p in unread.tolist()])
            self.codes[unread] = [self.kept.code(subject_key(texts.get(self.ids[p], ""))) for p in unread.tolist()]
        return self.codes[positions]

    def _check(self, positions: np.ndarray) -> np.ndarray:
        """Compare the vectors of these positions not checked yet with the kept ones (a kept code whose vector
        moved is let go); returns the distinct positions among them whose subject must be read."""
        # Marked on a mask rather than sorted unique: a full pass asks for both ends of 23M pairs at a million
        # memories, where np.unique took seconds.
        wanted = np.zeros(len(self.ids), dtype=bool)
        wanted[positions] = True
        todo = np.flatnonzero(wanted & ~self.checked)
        for start in range(0, todo.size, PRINT_CHUNK):  # a chunk of vectors copied at a time
            part = todo[start:start + PRINT_CHUNK]
            self.prints[part] = fingerprints(self.unit[part], None)
        self.codes[todo[self.prints[todo] != self.kept_prints[todo]]] = UNREAD
        self.checked[todo] = True
        return np.flatnonzero(wanted & (self.codes == UNREAD))

    def unread(self, groups: list[np.ndarray]) -> int:
        """How many memories of these groups (positions) have a subject not known yet (checked now)."""
        if not groups:
            return 0
        return int(self._check(np.concatenate(groups)).size)

    def keep(self, ctx: TaskContext) -> None:
        """Leave what is known for the next pass: what was read or checked, and what was kept before for the
        others (a pass of one scope, or as of a time, keeps nothing: it read only some)."""
        if ctx.graph.scoping.whole:
            prints = np.where(self.checked, self.prints, self.kept_prints)
            self.kept.keep(self.ids, self.changes, prints, self.codes)


def settle(ctx: TaskContext, dry_run: bool, ids: list[str], unit: np.ndarray, groups: list[np.ndarray],
           previous: list[MetaPatternRecord], untouched: list[MetaPatternRecord] = ()) -> dict[str, Any]:
    """Match the clusters (rows of `ids` / `unit`) with the MetaPatterns they may continue, write the new and
    changed ones and retire the rest of `previous`; the report of what was found and done. `untouched`: the
    MetaPatterns an incremental run leaves as they are, reported unchanged as a full pass would report them."""
    matches, retired = match_clusters([frozenset(map(ids.__getitem__, g.tolist())) for g in groups], previous)
    changed = [(m, g) for m, g in zip(matches, groups) if m.pattern_id is None or m.members != m.previous_members]
    patterns = _patterns(ctx, changed, unit, ids)
    if not dry_run:
        _write(ctx, patterns, retired)
    ctx.progress(len(ids), len(ids))
    limit = ctx.settings.consolidation_report_limit
    written = {id(p["match"]): p for p in patterns}
    matches += [ClusterMatch(p.member_ids, p.id, p.member_ids) for p in untouched]
    matches.sort(key=lambda m: len(m.members), reverse=True)  # largest first, as clusters() finds them
    listing = [_listed(m, written.get(id(m)), dry_run, limit) for m in matches]
    return {
        "clusters_found": len(matches),
        "memories_clustered": int(sum(len(m.members) for m in matches)),
        "created": sum(1 for m in matches if m.pattern_id is None),
        "updated": sum(1 for m, _ in changed if m.pattern_id is not None),
        "unchanged": len(matches) - len(changed),
        **capped("retired", retired, limit),
        "clusters": listing,
    }


def refresh(ctx: TaskContext) -> int:
    """Rebuild each summary a member of which left (superseded, merged away, archived, deleted) from its members
    still current, never from its earlier text; one left with fewer than the minimum size is retired. Returns
    how many summaries were rebuilt or retired."""
    stale = ctx.graph.summaries_members_left()
    if not stale:
        return 0
    ids, matrix = ctx.vectors.vectors(sorted({m for _, _, current in stale for m in current}))
    row = {memory_id: r for r, memory_id in enumerate(ids)}
    changed, retired = [], []
    for pattern_id, members, current in stale:
        remaining = sorted(m for m in current if m in row)
        if len(remaining) < ctx.settings.consolidation_cluster_min_size:
            retired.append(pattern_id)
        else:
            match = ClusterMatch(frozenset(remaining), pattern_id, members)
            changed.append((match, np.array([row[m] for m in remaining], dtype=np.int64)))
    _write(ctx, _patterns(ctx, changed, normalized(matrix), ids), retired)
    return len(stale)


def _patterns(ctx: TaskContext, changed: list[tuple[ClusterMatch, np.ndarray]], unit: np.ndarray,
              ids: list[str]) -> list[dict[str, Any]]:
    """The MetaPatterns to write for new or changed clusters, with two batched reads for all of them: the
    fields of every member, and the text of the most central members (all a summary quotes or counts)."""
    shapes = []
    for match, group in changed:
        centroid = normalized(unit[group].mean(axis=0, keepdims=True))[0]
        centrality = unit[group] @ centroid
        ranked = np.argsort(-centrality, kind="stable")
        shapes.append((match, [ids[group[i]] for i in ranked], centrality[ranked], centroid))
    details = ctx.graph.memory_details([m for _, members, _, _ in shapes for m in members])
    contents = ctx.graph.memory_contents([m for _, members, _, _ in shapes for m in members[:SUMMARY_MEMBERS]])
    return [_pattern(ctx, match, members, centrality, centroid, details, contents)
            for match, members, centrality, centroid in shapes]


def _pattern(ctx: TaskContext, match: ClusterMatch, member_ids: list[str], centrality: np.ndarray,
             centroid: np.ndarray, details: dict[str, dict[str, Any]], contents: dict[str, str]) -> dict[str, Any]:
    """The MetaPattern for one cluster: properties, members and vector (members come most central first)."""
    members = [_member(m, details.get(m, {}), contents.get(m, ""), float(c)) for m, c in zip(member_ids, centrality)]
    summary = ctx.summarizer.summarize(members)
    created = epoch_seconds(details.get(m, {}).get("timestamp") for m in member_ids)
    known = created[~np.isnan(created)]
    importance = _mean_fraction([details.get(m, {}).get("importance") for m in member_ids], DEFAULT_IMPORTANCE)
    confidence = round(float(np.clip(centrality.mean(), 0.0, 1.0)), 6)
    props = {
        "type": "MetaPattern",
        "content": summary.text,
        "summary_method": summary.method,
        "dominant_type": type_mix(members)[0][0],
        "cluster_size": len(members),
        "temporal_span_days": round(float((known.max() - known.min()) / SECONDS_PER_DAY), 3) if known.size else 0.0,
        "member_fingerprint": _fingerprint(match.members),
        "importance": importance,
        "confidence": confidence,
        "archived": False,
        "protected": True,
        "protected_reason": "summarizes an active cluster",
        "updated_at": to_iso(ctx.now),
        # A cluster lies in one scope: its summary belongs to that scope too.
        **{name: value for name, value in details.get(member_ids[0], {}).get("scope", {}).items()
           if value is not None},
    }
    if match.pattern_id is None:
        now = to_iso(ctx.now)
        score = relevance_scores(np.zeros(1), np.zeros(1), np.array([len(members)]), np.array([importance]),
                                 np.array([confidence]))[0]
        props.update(created_at=now, timestamp=now, last_accessed=now, access_count=0,
                     relevance_score=round(float(score), 6))
    return {"id": match.pattern_id or str(uuid.uuid4()), "match": match, "props": props, "vector": centroid}


def _write(ctx: TaskContext, patterns: list[dict[str, Any]], retired: list[str]) -> None:
    # Vectors before nodes: a crash in between leaves a vector without a node, which reconcile removes,
    # never a MetaPattern node without its vector.
    ctx.vectors.upsert([
        VectorPoint(p["id"], p["vector"], payload_of(p["props"], ctx.graph.scoping))
        for p in patterns
    ])
    ctx.graph.save_meta_patterns(
        [{"id": p["id"], "props": p["props"]} for p in patterns],
        added=[(p["id"], m) for p in patterns for m in p["match"].members - p["match"].previous_members],
        removed=[(p["id"], m) for p in patterns for m in p["match"].previous_members - p["match"].members],
    )
    if retired:
        ctx.graph.retire_meta_patterns(retired, to_iso(ctx.now))
        ctx.vectors.set_archived(retired, True)
        ctx.lifecycle.rescore(retired, ctx.now)  # capped: AutoMem's passes would read a retired summary as alive
    # Each summary written or retired was built from current members: no rebuild left to do for it.
    ctx.graph.summaries_rebuilt([p["id"] for p in patterns] + list(retired))


def _member(memory_id: str, detail: dict[str, Any], content: str, centrality: float) -> ClusterMember:
    timestamp = detail.get("timestamp")
    return ClusterMember(memory_id, content, detail.get("type") or "Memory",
                         timestamp[:10] if isinstance(timestamp, str) else None, centrality)


def _listed(match: ClusterMatch, pattern: dict[str, Any] | None, dry_run: bool, limit: int) -> dict[str, Any]:
    if match.pattern_id is None:
        action = "create"
    else:
        action = "update" if pattern is not None else "unchanged"
    return {
        # A dry run creates nothing, so a new cluster has no MetaPattern id to show yet.
        "meta_pattern_id": match.pattern_id or (None if dry_run else pattern["id"]),
        "action": action,
        "size": len(match.members),
        **capped("member_ids", sorted(match.members), limit),
    }


def _mean_fraction(values: list[Any], default: float) -> float:
    numbers = [float(v) for v in values if isinstance(v, (int, float))]
    return round(float(np.clip(np.mean(numbers), 0.0, 1.0)), 6) if numbers else default


def _fingerprint(members: frozenset[str]) -> str:
    return hashlib.sha256("\n".join(sorted(members)).encode()).hexdigest()[:16]
