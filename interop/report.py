"""The table of checks the run prints: check, expected, seen, and pass / FAIL (or a note, or a TODO not checked)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

PASS, FAIL, NOTE, TODO = "pass", "FAIL", "note", "TODO"


@dataclass
class Row:
    phase: str
    item: str
    check: str
    expected: str
    seen: str
    status: str


class Table:
    def __init__(self):
        self.rows: list[Row] = []
        self.phase = ""

    def check(self, item: str, check: str, expected: str, seen: object, ok: bool) -> bool:
        self.rows.append(Row(self.phase, item, check, expected, _short(seen), PASS if ok else FAIL))
        mark = "ok  " if ok else "FAIL"
        print(f"  [{mark}] {item:>4} {check}: {_short(seen)}", flush=True)
        return ok

    def note(self, item: str, check: str, expected: str, seen: object, status: str = NOTE) -> None:
        self.rows.append(Row(self.phase, item, check, expected, _short(seen), status))
        print(f"  [{status}] {item:>4} {check}: {_short(seen)}", flush=True)

    @property
    def failed(self) -> list[Row]:
        return [row for row in self.rows if row.status == FAIL]

    def render(self) -> str:
        widths = {"item": 4, "check": 46, "expected": 34, "seen": 46, "status": 6}
        header = f"{'item':<4} | {'check':<46} | {'expected':<34} | {'seen':<46} | result"
        lines = [header, "-" * len(header)]
        phase = None
        for row in self.rows:
            if row.phase != phase:
                phase = row.phase
                lines.append(f"== {phase}")
            cells = [textwrap.wrap(getattr(row, name), width) or [""] for name, width in widths.items()]
            for i in range(max(len(c) for c in cells)):
                parts = [(c[i] if i < len(c) else "").ljust(w) for c, w in zip(cells, widths.values())]
                lines.append(" | ".join(parts).rstrip())
        return "\n".join(lines)


def _short(value: object, limit: int = 300) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
