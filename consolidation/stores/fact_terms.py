"""Where dedup's stored fact terms live: a FactTerms node beside each memory, keyed by its id, not on the memory.

FalkorDB puts a node back into every index of its labels whenever any of its properties is written. Terms are
arrays (each element indexed), so while they lay on the Memory node every score decay wrote, every touch and
every archive re-indexed a dozen terms: a quarter of each memory write's cost (docs/performance.md, issue 43,
tenth part). On a node of their own, only a write of the terms themselves re-indexes them.

A FactTerms node holds `terms` and `anchors` (indexed: "memories holding term t" is an index lookup) and `least`;
the memory keeps `fact_stamp`, which says which text and rules the terms were read from (dedup reads it with
every memory, so it stays where that read already is). Every query that reaches memories through their terms
matches the memory by id afterwards, so a FactTerms node whose memory another program deleted finds nothing;
dedup's full pass sweeps such nodes away (their terms are words of a text nobody should keep). The service's own
deletions take the terms with the memory (changes.DELETE_TOUCHING_NEIGHBOURS).
"""

from __future__ import annotations

FACT_TERMS = "FactTerms"
INDEXES = ((FACT_TERMS, "memory_id"), (FACT_TERMS, "terms"), (FACT_TERMS, "anchors"))

# Where older versions kept the terms: on the memory, with two indexes of the Memory label. Dropped when the
# schema is ensured; the properties go when dedup stores the memory's terms again (TERMS_VERSION changed).
LEGACY_PROPERTIES = ("fact_terms", "fact_anchors", "fact_least")
LEGACY_INDEXES = (("Memory", "fact_terms"), ("Memory", "fact_anchors"))

# Store the terms of `row` {terms, anchors, least} for the memory bound to `m` (a clause; `m` and `row` stay
# bound after it).
SET_TERMS = (f"MERGE (f:{FACT_TERMS} {{memory_id: m.id}}) "
             "SET f.terms = row.terms, f.anchors = row.anchors, f.least = row.least ")

# Clear what older versions stored on the memory bound to `m` (SET items).
CLEAR_LEGACY = ", ".join(f"m.{name} = null" for name in LEGACY_PROPERTIES)

# The memory holding the terms bound to `f` (a clause: only memories still there go on). Its WITH makes FalkorDB
# look each one up by its id: two MATCH clauses in a row are planned as a hash join over every memory.
ITS_MEMORY = "WITH * MATCH (m:Memory {id: f.memory_id}) "

# The terms of the memory bound to `m`, if stored (a clause binding `f`, possibly null).
TERMS_OF_MEMORY = f"OPTIONAL MATCH (f:{FACT_TERMS} {{memory_id: m.id}}) "

# What follows `MATCH (n:FactTerms)` to keep only those whose memory is gone (another program deleted it).
ORPHANED = "OPTIONAL MATCH (m:Memory {id: n.memory_id}) WITH n, m WHERE m IS NULL"
# Delete the FactTerms of the memory ids in `$rows` that are still orphaned (a memory may have come back since).
DELETE_ORPHANED = (f"UNWIND $rows AS id MATCH (n:{FACT_TERMS} {{memory_id: id}}) {ORPHANED} DELETE n "
                   "RETURN count(n)")
