"""A run's report opened for reading (pure): each task's lists paged, and the memory ids they name, so the
texts can be shown beside them."""

from __future__ import annotations

from typing import Any

# The fields of report items that name memories (a list of ids, or one).
ID_FIELDS = ("into", "duplicates", "newer", "older", "a", "b", "from", "to", "memory_id", "member_ids", "first",
             "second", "meta_pattern_id")


def paged_report(report: dict[str, Any], limit: int, offset: int) -> dict[str, Any]:
    """The task's report with every list cut to one page, and `lists`: name -> {items, total} of the page."""
    scalars = {name: value for name, value in report.items() if not isinstance(value, list)}
    lists = {name: {"items": items[offset:offset + limit], "total": report.get(f"{name}_total", len(items)),
                    "kept": len(items)}
             for name, items in report.items() if isinstance(items, list) and items and isinstance(items[0], dict)}
    return {"report": scalars, "lists": lists}


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
