"""Merging memories and undoing a merge: the MergeRecords a merge is written as (the canonical's fields by the
rules of hygiene/merges), and a restore that undoes exactly what its record says was done."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from ..hygiene.merges import CANONICAL_FIELDS, Merge, canonical_apart, merged_fields, unmerged_properties
from ..memory import MAX_COUNT
from ..stores.hygiene import HygieneStore


def merge(store: HygieneStore, merges: Sequence[Merge], at: str) -> list[str]:
    """Record, then apply, each merge (one record per duplicate: its properties and edges, the canonical's fields
    before and after). Returns the ids archived as duplicates."""
    snapshots = store.snapshots(sorted({d for m in merges for d in m.duplicates}))
    # A canonical keeps its own edges and other fields: only those a merge changes are recorded, to be put back on
    # a restore.
    canonicals = store.fields_of([m.into for m in merges], CANONICAL_FIELDS)
    records = []
    for planned in merges:
        canonical = canonicals[planned.into]
        duplicates = [snapshots[d] for d in planned.duplicates if d in snapshots]
        before = {f: canonical.get(f) for f in CANONICAL_FIELDS}
        after = merged_fields(canonical, [d["properties"] for d in duplicates], MAX_COUNT)
        group = str(uuid.uuid4())
        records += [{"id": str(uuid.uuid4()), "group_id": group, "canonical_id": planned.into,
                     "duplicate_id": d["properties"]["id"], "state": "pending", "merged_at": at,
                     "similarity": planned.similarity, "reason": planned.reason,
                     "duplicate": d, "canonical_before": before, "canonical_after": after} for d in duplicates]
    return store.merge(records)


def unmerge(store: HygieneStore, duplicate_id: str, at: str) -> dict[str, Any] | None:
    """Undo the merge of one duplicate still stored: its properties and edges back, the edges it lent the
    canonical gone, the canonical's fields as they would be without it. None if no merge of it is on record (or
    another restore claimed it first)."""
    record = store.claim("done", duplicate_id, at)
    if record is None:
        return None
    props = unmerged_properties(record["duplicate"]["properties"], record["canonical_id"], at)
    store.unmerge_node(duplicate_id, props)
    edges = store.restore_edges(duplicate_id, record["duplicate"]["edges"])
    settle_unmerged(store, record, at)
    return {"canonical_id": record["canonical_id"], "edges_restored": edges, "memory": props}


def unmerged_from_tombstone(store: HygieneStore, duplicate_id: str, properties: dict[str, Any],
                            edges: list[dict[str, Any]], at: str) -> tuple[dict[str, Any] | None, dict[str, Any],
                                                                         list[dict[str, Any]]]:
    """A merged duplicate deleted with its canonical (its tombstone's properties and edges), as a memory of its
    own again: its merge record claimed (None when it is gone: then the duplicate as the tombstone kept it), its
    properties as before the merge, and its edges with those the merge took. settle_unmerged follows once it is
    back."""
    record = store.claim("deleted", duplicate_id, at)
    canonical_id = record["canonical_id"] if record else properties["merged_into"]
    before_merge = record["duplicate"] if record else {"properties": properties, "edges": []}
    properties = unmerged_properties(before_merge["properties"], canonical_id, at)
    edges = edges + before_merge["edges"]  # (restore_edges leaves the merge's own edges out)
    return record, properties, edges


def settle_unmerged(store: HygieneStore, record: dict[str, Any], at: str) -> None:
    """The canonical (if it is still stored) without the restored duplicate of this claimed record: the edges it
    lent gone, its fields set apart (hygiene/merges.canonical_apart, and the group's other records updated to
    match); then the record says 'restored'."""
    duplicate_id, canonical_id = record["duplicate_id"], record["canonical_id"]
    store.drop_lent_edges(canonical_id, duplicate_id)
    others = store.merged_with(record["group_id"], duplicate_id)
    current = store.properties_of(canonical_id)
    if current is not None:
        fields, distinct = canonical_apart(current, record, others, MAX_COUNT)
        store.set_canonical(canonical_id, fields, distinct)
        # Their record of "after" now reads the canonical as it is without this duplicate.
        store.set_canonical_after([{"id": o["id"], "after": {**record["canonical_after"], **fields}} for o in others])
    store.mark_restored(record["id"], at)
