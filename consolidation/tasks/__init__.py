"""The five consolidation tasks, by name, in the order a full run takes them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import cluster, creative, decay, dedup, forget
from .context import TaskContext

TaskFunction = Callable[[TaskContext, bool], dict[str, Any]]

TASKS: dict[str, TaskFunction] = {
    "decay": decay.run,
    "dedup": dedup.run,
    "creative": creative.run,
    "cluster": cluster.run,
    "forget": forget.run,
}

__all__ = ["TASKS", "TaskContext", "TaskFunction"]
