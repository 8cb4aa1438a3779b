"""Structured logging: one line per event, as key=value text or JSON, set up once per process."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from .settings import Settings


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = f"ts={_ts(record)} level={record.levelname} logger={record.name} msg={json.dumps(record.getMessage())}"
        if record.exc_info:
            line += f" exc={json.dumps(self.formatException(record.exc_info))}"
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event = {"ts": _ts(record), "level": record.levelname, "logger": record.name, "msg": record.getMessage()}
        if record.exc_info:
            event["exc"] = self.formatException(record.exc_info)
        return json.dumps(event)


def configure_logging(settings: Settings) -> None:
    """Route the root logger to stderr in the chosen format (idempotent: replaces our own handler)."""
    root = logging.getLogger()
    root.setLevel(settings.log_level)
    for handler in list(root.handlers):
        if getattr(handler, "_consolidation", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if settings.log_format == "json" else KeyValueFormatter())
    handler._consolidation = True
    root.addHandler(handler)


def _ts(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
