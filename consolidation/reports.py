"""A run's report opened for reading (pure): each task's lists paged, and the memory ids they name, so the
texts can be shown beside them."""

from __future__ import annotations

from typing import Any

# The fields of report items that name memories (a list of ids, or one).
ID_FIELDS = ("into", "duplicates", "newer", "older", "a", "b", "from", "to", "memory_id", "member_ids", "first",
             "second", "meta_pattern_id")


def filed(report: dict[str, Any], limit: int) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """A task's report as its run record keeps it, each list of items cut to its first `limit` with `<name>_total`
    (unless the task counted it: a sample's total counts more than it holds), and its whole lists, which are kept
    apart (stores/report_pages.py) so that the report pages to their last item."""
    lists = {name: items for name, items in report.items() if _is_listing(items)}
    kept = {name: items[:limit] for name, items in lists.items()}
    totals = {f"{name}_total": report.get(f"{name}_total", len(items)) for name, items in lists.items()}
    return {**report, **kept, **totals}, lists


def paged_report(report: dict[str, Any], limit: int, offset: int,
                 stored: dict[str, tuple[int, list[dict[str, Any]]]]) -> dict[str, Any]:
    """The task's report with every list cut to one page, and `lists`: name -> {items, total, kept} of the page.
    `stored`: the lists kept apart (name -> how many items, the page of them); a list without them (dropped with
    an older run, or recorded before they were kept) pages through the items the report itself keeps."""
    scalars = {name: value for name, value in report.items() if not isinstance(value, list)}
    lists = {}
    for name, items in report.items():
        if _is_listing(items) and items:
            kept, page = stored.get(name, (0, []))
            if kept < len(items):
                kept, page = len(items), items[offset:offset + limit]
            lists[name] = {"items": page, "total": report.get(f"{name}_total", len(items)), "kept": kept}
    return {"report": scalars, "lists": lists}


def _is_listing(value: Any) -> bool:
    """A list of items (merges, decisions, ...; or none), not of plain values (ids, numbers)."""
    return isinstance(value, list) and (not value or isinstance(value[0], dict))


def named_ids(lists: dict[str, dict[str, Any]]) -> list[str]:
    """Every memory id the listed items name, in first-seen order."""
    seen: dict[str, None] = {}
    for listed in lists.values():
        for item in listed["items"]:
            for name in ID_FIELDS:
                value = item.get(name)
                for memory_id in value if isinstance(value, list) else [value]:
                    if isinstance(memory_id, str):
                        seen.setdefault(memory_id, None)
    return list(seen)


def task_outcome(report: dict[str, Any]) -> str:
    """How a task of a run ended, from its report: success, cancelled (an administrator stopped it at a safe
    point: no failure) or failure."""
    return "success" if report.get("success") else "cancelled" if report.get("cancelled") else "failure"
