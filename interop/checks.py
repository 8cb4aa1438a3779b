"""The checks: assertions about the shared store read from outside (AutoMem's API, ours, the graph, the vectors)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from consolidation.settings import child_environment
from interop import dataset
from interop.harness import Harness
from interop.report import TODO


class Checks(Harness):
    """The harness with its checks (items 1-6 of issue 40, the detection of AutoMem's engine, both sides' views)."""

    def check_item1(self) -> None:
        """t_invalid in the payload of what we superseded; AutoMem's current recall leaves the old text out."""
        for key in ("home", "atlas_lang", "car"):
            old = self.ids[key]
            payload = self.vectors.payload(old) or {}
            value = payload.get("t_invalid")
            self.table.check("1", f"payload t_invalid of superseded '{key}'", "set (ISO time or epoch s)",
                             f"t_invalid={value!r}", _is_time(value))
        for key, why in (("home", "newer memory answers instead"), ("car", "its successor was forgotten")):
            old = self.ids[key]
            current = self.automem.recall_ids(self.vec[old], "current")
            self.table.check("1", f"AutoMem recall current: superseded '{key}' ({why})", "old memory absent",
                             f"old {'PRESENT' if old in current else 'absent'}; top={self._names(current[:3])}",
                             old not in current)

    def check_item3_scores(self) -> None:
        rows = self.graph.query(
            "MATCH (m:Memory) WHERE (coalesce(m.archived, false) = true OR m.merged_into IS NOT NULL "
            "OR m.superseded_by IS NOT NULL) AND m.relevance_score > 0.3 RETURN m.id, m.relevance_score")
        total = len(self.non_current())
        self.table.check("3", "non-current memories with relevance_score > 0.3", f"none (of {total})",
                         ", ".join(f"{self._name(r[0])}={r[1]:.2f}" for r in rows) or "none", not rows)

    def check_item3_edges(self, new_edges: set[tuple], metas: set[str], non_current: dict[str, str]) -> None:
        touching = sorted(f"{t} {self._name(a)}->{self._name(b)}" for t, a, b in new_edges
                          if a in non_current or b in non_current)
        self.table.check("3", "AutoMem's new edges/summaries touching non-current memories", "none",
                         f"{len(touching)} of {len(new_edges)} new: " + "; ".join(touching[:6]) if touching
                         else f"none of {len(new_edges)} new ({len(metas)} summaries)", not touching)

    def check_item4(self, metas: set[str]) -> None:
        status = self.ours.status()["store_counts"]
        reconcile = self.ours.reconcile()
        missing = set(reconcile.get("nodes_without_vectors") or [])
        counted = sorted(missing & metas)
        self.table.check("4", "AutoMem's MetaMemory not a node without vector", f"0 of {len(metas)} listed",
                         f"{len(counted)} listed by /reconcile; nodes_without_vectors_total="
                         f"{reconcile.get('nodes_without_vectors_total')}", not counted and bool(metas))
        self.table.check("4", "status store_counts: no graph/vector drift", "in_sync, difference 0",
                         f"graph {status.get('graph_memories')} vs points {status.get('vector_points')}, "
                         f"difference {status.get('difference')}", status.get("difference") == 0)

    def check_item5(self, baseline: dict[str, int] | None, automem_edges: dict[str, int]) -> None:
        """Our hygiene listings (our decisions) hold none of AutoMem's DISCOVERED / CONTRADICTS edges."""
        for path, kind in (("/hygiene/associations", "DISCOVERED"), ("/hygiene/contradictions", "CONTRADICTS")):
            listing = self.ours.listing(path)
            theirs = [item for item in listing["items"]
                      if self.edge_author.get((kind, item.get("from_id"), item.get("to_id"))) == "automem"]
            expected = f"none of AutoMem's {automem_edges[kind]} {kind}"
            seen = f"{len(theirs)} of AutoMem's listed, total {listing['total']}"
            ok = not theirs
            if baseline is not None:
                expected += f"; total stays {baseline[path]}"
                ok = ok and listing["total"] == baseline[path]
            self.table.check("5", f"{path} lists ours only", expected, seen, ok)

    def check_item6(self) -> None:
        cases = [(self.merged_key("dark_mode"), "merged by our dedup"), ("old_wifi", "archived by our forget")]
        for key, why in cases:
            memory_id = self.ids[key]
            state = self.our_state(memory_id)
            ours = self.ours.recall_ids(self.vec[memory_id], "current")
            theirs = self.automem.recall_ids(self.vec[memory_id], "current")
            self.table.check("6", f"'{key}' ({why}, state {state}) out of both recalls (current)",
                             "absent from ours and AutoMem's",
                             f"ours {'PRESENT' if memory_id in ours else 'absent'}, AutoMem "
                             f"{'PRESENT' if memory_id in theirs else 'absent'}",
                             memory_id not in ours and memory_id not in theirs and state in ("merged", "archived"))

    def check_item6_automem_archive(self) -> None:
        memory_id = self.ids["old_note"]
        node = self.graph.props(memory_id) or {}
        payload = self.vectors.payload(memory_id) or {}
        ours = self.ours.recall_ids(self.vec[memory_id], "current")
        self.table.check("6", "'old_note' archived by AutoMem's forget out of our recall (current)",
                         "absent", f"archived={node.get('archived')}, payload state={payload.get('state')!r}; "
                         f"ours {'PRESENT' if memory_id in ours else 'absent'}",
                         node.get("archived") is True and memory_id not in ours)

    def check_item6_crowd(self) -> None:
        """A current memory behind more AutoMem-archived points (no `state`) than our recall fetches: found only if
        the store's filter leaves those points out."""
        target = self.ids["vpn_now"]
        crowd = [self.ids[f"crowd_{i}"] for i in range(dataset.CROWD)]
        archived = self.graph.query("UNWIND $ids AS id MATCH (m:Memory {id: id}) WHERE m.archived = true "
                                    "RETURN count(m)", ids=crowd)[0][0]
        ours = self.ours.recall_ids(self.crowd_query, "current", 10)
        self.table.check("6", f"our recall (current) past {dataset.CROWD} notes AutoMem's forget archived",
                         "the current memory behind them found",
                         f"{archived} archived by AutoMem; 'vpn_now' {'found' if target in ours else 'MISSING'}, "
                         f"{len(ours)} results", target in ours and archived == dataset.CROWD)

    def check_active_visible(self) -> None:
        memory_id = self.ids["misc_0"]
        ours = self.ours.recall_ids(self.vec[memory_id], "current")
        theirs = self.automem.recall_ids(self.vec[memory_id], "current")
        self.table.check("6", "active AutoMem memory (no state in payload) found by both recalls", "present in both",
                         f"ours {'present' if memory_id in ours else 'ABSENT'}, AutoMem "
                         f"{'present' if memory_id in theirs else 'ABSENT'}", memory_id in ours and memory_id in theirs)

    def check_item2(self) -> None:
        first = self.our_run_ids[0]
        status, body = self.ours.run(first)
        self.table.check("2", "our first run readable at GET /consolidate/runs/<id>", "200",
                         f"{status} {body.get('state') if isinstance(body, dict) else ''}", status == 200)
        theirs = self.automem_run_ids()
        listed = [run.get("run_id") or run.get("id") for run in self.ours.runs()]
        foreign = [r for r in listed if r in theirs or r not in self.our_run_ids]
        self.table.check("2", "our GET /consolidate/runs lists only our runs",
                         f"{len(self.our_run_ids)} ours, none of AutoMem's {len(theirs)}",
                         f"{len(listed)} listed, {len(foreign)} not ours", not foreign)
        history = self.automem.status().get("history", [])
        ours_in_theirs = [h.get("id") for h in history if h.get("id") in self.our_run_ids or h.get("mode") is None]
        self.table.check("2", "AutoMem's /consolidate/status history holds no run of ours", "none",
                         f"{len(ours_in_theirs)} of {len(history)}", not ours_in_theirs)

    def check_current_clean(self) -> None:
        """Neither side's current recall answers a memory that is no longer current (probes: every memory of the
        set but the crowd, and the updates)."""
        non_current = self.non_current()
        probes = [memory_id for key, memory_id in self.ids.items() if not key.startswith("crowd_")]
        probes += [memory_id for memory_id in self.new_ids.values() if memory_id not in self.forgotten]
        leaks = []
        for memory_id in probes:
            for side, answered in (("ours", self.ours.recall_ids(self.vec[memory_id], "current", 5)),
                                   ("AutoMem", self.automem.recall_ids(self.vec[memory_id], "current", 5))):
                leaks += [f"{side}: {self._name(i)} ({non_current[i]})" for i in answered if i in non_current]
        leaks = sorted(set(leaks))
        self.table.check("", f"recall current (both sides, {len(probes)} probes) answers only current memories",
                         f"none of the {len(non_current)} non-current", "; ".join(leaks[:6]) or "none", not leaks)

    def check_views(self) -> None:
        """Both services' views of each non-current memory, and both recalls, agree."""
        probes = [(self.merged_key("dark_mode"), "merged"), ("old_wifi", "archived"), ("home", "superseded"),
                  ("atlas_lang", "superseded"), ("misc_3", "active")]
        disagreements = []
        for key, expected in probes:
            memory_id = self.ids[key]
            ours = self.our_state(memory_id)
            node = self.automem.get(memory_id) or {}
            if node.get("archived") is True:
                theirs = "archived"
            elif node.get("t_invalid") and _parse(node["t_invalid"]) <= datetime.now(UTC):
                theirs = "superseded"
            else:
                theirs = "active"
            ok = ours == expected and (theirs == expected or (expected == "merged" and theirs == "archived"))
            if not ok:
                disagreements.append(f"{key}: ours {ours}, AutoMem {theirs}, expected {expected}")
        self.table.check("", "GET /memory on both sides: states agree", "merged/archived/superseded/active "
                         "as expected", "; ".join(disagreements) or f"{len(probes)} agree", not disagreements)
        # Recall, current and history, for the superseded memory whose newer one is current.
        old, new = self.ids["home"], self.new_ids["home"]
        cur_ours = self.ours.recall_ids(self.vec[old], "current")
        cur_theirs = self.automem.recall_ids(self.vec[old], "current")
        hist_ours = self.ours.recall_ids(self.vec[old], "history")
        hist_theirs = self.automem.recall_ids(self.vec[old], "history")
        self.table.check("", "recall current on old 'home' text: newer answers on both",
                         "new present, old absent, both sides",
                         f"ours new={new in cur_ours} old={old in cur_ours}; AutoMem new={new in cur_theirs} "
                         f"old={old in cur_theirs}",
                         new in cur_ours and old not in cur_ours and new in cur_theirs and old not in cur_theirs)
        self.table.check("", "recall history on old 'home' text: old shown on both", "old present, both sides",
                         f"ours {old in hist_ours}, AutoMem {old in hist_theirs}",
                         old in hist_ours and old in hist_theirs)

    def check_census(self, author: str, after: str) -> None:
        """No edge of `author` was deleted or re-pointed by the other side (edges whose both ends still exist;
        memories deleted on request through our API are left out)."""
        now = self.edges()
        alive = {r[0] for r in self.graph.query("MATCH (n) WHERE n.id IS NOT NULL RETURN n.id")}
        merged_into = {r[0]: r[1] for r in self.graph.query(
            "MATCH (m:Memory) WHERE m.merged_into IS NOT NULL RETURN m.id, m.merged_into")}
        lost, moved = [], []
        for (t, a, b), who in self.edge_author.items():
            if who != author or (t, a, b) in now or a not in alive or b not in alive:
                continue
            if a in self.forgotten or b in self.forgotten:
                continue
            text = f"{t} {self._name(a)}->{self._name(b)}"
            a2, b2 = merged_into.get(a, a), merged_into.get(b, b)
            (moved if (a2, b2) != (a, b) and (a2 == b2 or (t, a2, b2) in now) else lost).append(text)
        total = sum(1 for who in self.edge_author.values() if who == author)
        gone = len(lost) + len(moved)
        seen = (f"{gone} gone ({len(moved)} re-pointed to or dropped at a merge's canonical, "
                f"{len(lost)} lost): " + "; ".join(sorted(moved)[:3] + sorted(lost)[:3])) if gone else \
            f"all {total} kept"
        whose = "AutoMem's" if author == "automem" else "our"
        self.table.check("", f"{whose} edges kept after {after}", f"all {total} kept as written", seen, not gone)

    def records(self) -> set[tuple]:
        """Every node that is not a memory, nor a run record of AutoMem's label (mixed with ours before item 2):
        (label, id)."""
        rows = self.graph.query("MATCH (n) WHERE NOT n:Memory AND NOT n:ConsolidationRun "
                                "RETURN labels(n)[0], coalesce(n.id, n.key, n.memory_id, toString(id(n)))")
        return {tuple(row) for row in rows}

    def check_records_kept(self, before: set[tuple], after: str) -> None:
        gone = sorted(before - self.records())
        self.table.check("", f"our records (merge, request, audit, tombstone, control ...) kept after {after}",
                         f"all {len(before)}", f"{len(gone)} gone: {gone[:4]}" if gone else f"all {len(before)} kept",
                         not gone)

    def check_automem_records(self, runs_before: set[str], metas: dict[str, dict]) -> None:
        runs_now = self.automem_run_ids()
        metas_now = {r[0]: dict(r[1]) for r in self.graph.query(
            "MATCH (m:MetaMemory) RETURN m.id, properties(m)")}
        gone_runs = runs_before - runs_now
        changed = sorted(self._name(i) + ":" + ",".join(sorted(k for k in set(p) | set(metas_now.get(i, {}))
                                                                if p.get(k) != metas_now.get(i, {}).get(k)))
                         for i, p in metas.items() if metas_now.get(i) != p)
        self.table.check("", "AutoMem's run records kept by our run", f"all {len(runs_before)}",
                         f"{len(gone_runs)} gone", not gone_runs)
        self.table.check("4", "AutoMem's MetaMemory unchanged by our run (decay, cluster, forget)",
                         f"all {len(metas)} as AutoMem left them",
                         "changed: " + "; ".join(changed) if changed else "unchanged", not changed and bool(metas))

    def check_detection(self) -> None:
        status = self.ours.status()
        found = _find_key(status, ("automem", "other_engine"))
        if found is None:
            self.table.note("det", "status says AutoMem's consolidation writes here", "a status field",
                            "no such field in GET /consolidate/status yet", TODO)
            return
        path, value = found
        said = value.get("consolidating", value.get("present")) if isinstance(value, dict) else value
        self.table.check("det", "status says AutoMem's consolidation writes here", "consolidating: true",
                         f"{path}={value!r}"[:300], bool(said))

    def integration_tests(self, automem_src: Path, automem_python: Path) -> None:
        env = {k: v for k, v in child_environment({}).items() if k != "PYTHONPATH"}
        env.update({"AUTOMEM_RUN_INTEGRATION_TESTS": "1", "AUTOMEM_TEST_BASE_URL": self.stack.automem_url,
                    "AUTOMEM_TEST_API_TOKEN": self.stack.automem_token,
                    "AUTOMEM_TEST_ADMIN_TOKEN": self.stack.automem_admin})
        log = self.stack.logs / "automem-integration-tests.log"
        done = subprocess.run([str(automem_python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "tests/test_integration.py"], cwd=automem_src, env=env, capture_output=True,
                              text=True, timeout=600)
        log.write_text(done.stdout + done.stderr, encoding="utf-8")
        summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
        self.table.check("", "AutoMem's tests/test_integration.py on the result", "all pass, none skipped",
                         summary, done.returncode == 0 and "skipped" not in summary and "passed" in summary)


def _parse(value) -> datetime:
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, UTC)
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _is_time(value) -> bool:
    if value is None or value == "":
        return False
    try:
        _parse(value)
        return True
    except (TypeError, ValueError, OverflowError):
        return False


def _find_key(value, needles, path="status"):
    if isinstance(value, dict):
        for key, inner in value.items():
            if any(n in str(key).lower() for n in needles):
                return f"{path}.{key}", inner
            found = _find_key(inner, needles, f"{path}.{key}")
            if found:
                return found
    return None
