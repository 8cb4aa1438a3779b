"""`make interop`: AutoMem's application and this service on one store; our run, AutoMem's, ours again, checked.

    PYTHONPATH=. .venv/bin/python -m interop.run --automem-src DIR --automem-python PY --shared ../shared/automem

Exit status 1 if any check fails. Every process it starts is stopped at the end (and on an error or Ctrl-C).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from interop.checks import Checks
from interop.processes import ROOT, Stack
from interop.report import FAIL, Row, Table

AUTOMEM_RUNS = 22  # more than AutoMem's CONSOLIDATION_HISTORY_LIMIT (20): its prune of run records fires
SPACY_LINE = ("entities: NOT CHECKED. AutoMem extracts entities with spaCy's en_core_web_sm model, which is only "
              "published outside the package registries and cannot be installed here: AutoMem wrote no Entity "
              "nodes, so our entities task and AutoMem's entity links were not checked against each other.")


def check_both_views(h) -> None:
    """What both services show after any run: what AutoMem archived, merged or superseded stays out of a
    current recall on either side, active memories stay found, and both sides' memory views agree."""
    h.check_item6()
    h.check_item6_automem_archive()
    h.check_item6_crowd()
    h.check_active_visible()
    h.check_views()
    h.check_current_clean()

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--automem-src", type=Path, required=True, help="AutoMem's unpacked source")
    parser.add_argument("--automem-python", type=Path, required=True, help="the python of AutoMem's venv")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "automem",
                        help="the folder with run_automem.py and qdrant_standin.py")
    parser.add_argument("--work", type=Path, default=ROOT / ".interop" / "work")
    parser.add_argument("--service-root", type=Path, default=ROOT, help="the checkout of this service to run")
    args = parser.parse_args(argv)
    started = time.monotonic()
    args.work.mkdir(parents=True, exist_ok=True)
    automem_python = args.automem_python.absolute()  # a venv's python: not resolved (that is the base one)
    try:
        table = _run(args, automem_python)
    except KeyboardInterrupt:
        print("\ninterrupted: every process the check started is stopped", file=sys.stderr)
        return 130
    print()
    print(table.render())
    print()
    print(SPACY_LINE)
    failed = table.failed
    print(f"\n{len(table.rows)} rows, {len(failed)} failed, in {time.monotonic() - started:.0f} s "
          f"(logs in {args.work / 'logs'})")
    return 1 if failed else 0


def _run(args, automem_python: Path) -> Table:
    with Stack(args.work, args.automem_src.resolve(), automem_python, (args.shared / "qdrant_standin.py").resolve(),
               (args.shared / "run_automem.py").resolve(), args.service_root.resolve()) as stack:
        print(f"starting FalkorDB, the vector stand-in, AutoMem ({args.automem_src}) and this service "
              f"({args.service_root})", flush=True)
        stack.start()
        h = Checks(stack)
        try:
            run_all(h, args.automem_src.resolve(), automem_python)
        except Exception as exc:  # a step that could not run is a failure of the check, with its reason
            h.table.rows.append(_error_row(h.table.phase, exc))
            print(f"  [FAIL] step failed: {exc!r}", flush=True)
        finally:
            stack.stop()
    return h.table


def _error_row(phase, exc) -> Row:
    return Row(phase, "", "step could not run", "no error", repr(exc)[:300], FAIL)


def run_all(h: Checks, automem_src: Path, automem_python: Path) -> None:
    t = h.table
    h.store()

    t.phase = "1. our run (after supersedes on request through our API)"
    print(f"== {t.phase}", flush=True)
    h.our_requests()
    h.our_run()
    h.check_item1()
    h.check_item3_scores()
    h.check_item6()
    h.check_active_visible()
    h.check_views()
    h.check_current_clean()
    h.check_census("automem", "our run")

    t.phase = f"2. AutoMem's run (creative, cluster, forget, then decay: {AUTOMEM_RUNS} runs)"
    print(f"== {t.phase}", flush=True)
    records = h.records()
    hygiene = {path: h.ours.listing(path)["total"] for path in ("/hygiene/associations", "/hygiene/contradictions")}
    non_current = h.non_current()
    before = h.edges()
    creative = h.automem_run("creative")
    cluster = h.automem_run("cluster")
    new_edges = h.edges() - before
    metas = {r[0]: dict(r[1]) for r in h.graph.query("MATCH (m:MetaMemory) RETURN m.id, properties(m)")}
    h.automem_metas = metas
    kinds = {kind: sum(1 for e in new_edges if e[0] == kind) for kind in ("DISCOVERED", "CONTRADICTS")}
    steps = creative.get("steps", {}).get("creative", {})
    t.check("", "AutoMem's creative and cluster passes wrote", "DISCOVERED, CONTRADICTS, a MetaMemory",
            f"creative created {steps.get('created')}, {kinds}; cluster "
            f"{cluster.get('steps', {}).get('cluster', {}).get('meta_memories_created')} MetaMemory",
            kinds["DISCOVERED"] > 0 and kinds["CONTRADICTS"] > 0 and bool(metas))
    h.check_item3_edges(new_edges, set(metas), non_current)
    h.check_item5(hygiene, kinds)
    h.check_item4(set(metas))
    h.automem_run("forget")
    for _ in range(AUTOMEM_RUNS - 3):
        h.automem_run("decay")
    t.check("", "AutoMem's run records", f"pruned to its newest 20 of {AUTOMEM_RUNS}",
            f"{len(h.automem_run_ids())} ConsolidationRun nodes with a mode", len(h.automem_run_ids()) <= 20)
    h.check_item2()
    check_both_views(h)
    h.check_census("ours", "AutoMem's run")
    h.check_records_kept(records, "AutoMem's run")
    h.check_detection()

    t.phase = "3. our run again"
    print(f"== {t.phase}", flush=True)
    runs_before = h.automem_run_ids()
    metas = {r[0]: dict(r[1]) for r in h.graph.query("MATCH (m:MetaMemory) RETURN m.id, properties(m)")}
    h.our_run()
    h.check_automem_records(runs_before, metas)
    h.check_item3_scores()
    h.check_item4(set(metas))
    h.check_item5(None, kinds)
    h.check_item2()
    h.check_item1()
    check_both_views(h)
    h.check_census("automem", "our second run")

    t.phase = "4. AutoMem's integration tests against the live AutoMem, over the result"
    print(f"== {t.phase}", flush=True)
    h.integration_tests(automem_src, automem_python)


if __name__ == "__main__":
    sys.exit(main())
