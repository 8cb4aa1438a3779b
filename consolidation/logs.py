"""Structured logging: one line per event, as key=value text or JSON, for our loggers and gunicorn's."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from .settings import Settings

# gunicorn's access-log atoms worth a field of their own. The path atom (U) excludes the query string,
# so a token someone put in a URL never reaches the log.
ACCESS_FIELDS = {"m": "method", "U": "path", "s": "status", "b": "bytes", "M": "duration_ms", "h": "remote"}


def event_fields(record: logging.LogRecord, formatter: logging.Formatter) -> dict[str, Any]:
    """The fields of one log line: time, level, logger, then the message (or an access log's own fields)."""
    fields: dict[str, Any] = {"ts": _ts(record), "level": record.levelname, "logger": record.name}
    if record.name == "gunicorn.access" and isinstance(record.args, dict):
        fields.update({name: record.args.get(atom) for atom, name in ACCESS_FIELDS.items()})
    else:
        fields["msg"] = record.getMessage()
    if record.exc_info:
        fields["exc"] = formatter.formatException(record.exc_info)
    return fields


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{key}={_kv_value(value)}" for key, value in event_fields(record, self).items())


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(event_fields(record, self))


FORMATTERS = {"kv": KeyValueFormatter, "json": JsonFormatter}


def configure_logging(settings: Settings) -> None:
    """Route the root logger to stderr in the chosen format (idempotent: replaces our own handler)."""
    root = logging.getLogger()
    root.setLevel(settings.log_level)
    for handler in list(root.handlers):
        if getattr(handler, "_consolidation", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(FORMATTERS[settings.log_format]())
    handler._consolidation = True
    root.addHandler(handler)


def gunicorn_log_config(settings: Settings) -> dict[str, Any]:
    """A logging dictConfig that gives gunicorn's error and access logs the same one-line format as ours."""
    formatter = f"{__name__}.{FORMATTERS[settings.log_format].__name__}"
    logger = {"handlers": ["stderr"], "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"structured": {"()": formatter}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "structured",
                                "stream": "ext://sys.stderr"}},
        "loggers": {"gunicorn.error": {**logger, "level": settings.log_level},
                    "gunicorn.access": {**logger, "level": "INFO"}},
        "root": {"level": settings.log_level, "handlers": []},
    }


def _kv_value(value: Any) -> str:
    text = "" if value is None else str(value)
    needs_quotes = not text or any(c.isspace() or c in '"=' for c in text)
    return json.dumps(text) if needs_quotes else text


def _ts(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
