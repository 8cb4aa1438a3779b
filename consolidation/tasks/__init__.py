"""The consolidation tasks, by name, in the order a run takes them."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from ..clusters import LINK_RULES
from ..settings import Settings
from . import cluster, cluster_incremental, creative, decay, dedup, dedup_incremental, entities, forget
from .context import TaskContext

# The version of how decay and forget find what came due (revisits.py): a new one makes their next pass full.
DUE_VERSION = 1

TaskFunction = Callable[[TaskContext, bool], dict[str, Any]]


def _by_pass(full: TaskFunction, incremental: TaskFunction) -> TaskFunction:
    """A task that takes its full pass, or its incremental one when the context carries a watermark."""

    def run(ctx: TaskContext, dry_run: bool) -> dict[str, Any]:
        return full(ctx, dry_run) if ctx.since is None else incremental(ctx, dry_run)

    return run


TASKS: dict[str, TaskFunction] = {
    "decay": decay.run,
    "dedup": _by_pass(dedup.run, dedup_incremental.run),
    "creative": _by_pass(creative.run, creative.run_incremental),
    "cluster": _by_pass(cluster.run, cluster_incremental.run),
    "forget": forget.run,
    "entities": entities.run,
}



def incremental_version(task: str, settings: Settings) -> int:
    """A number for what an incremental task's watermark relies on: the version of the state earlier runs left
    (dedup's stored terms) and the settings that shape the result. Under another number the watermark is not
    trusted, and the next run is a full pass (a new minimum cluster size, say, makes clusters of components
    no earlier run stored)."""
    shape = {
        "dedup": (dedup.INCREMENTAL_VERSION, settings.consolidation_dedup_similarity,
                  settings.consolidation_scope_properties, settings.consolidation_dedup_vectors,
                  dedup.client_thresholds(settings), settings.consolidation_dedup_model_judge and
                  (settings.summarizer_llm_url, settings.summarizer_llm_model)),
        "cluster": (settings.consolidation_cluster_similarity, settings.consolidation_cluster_min_size,
                    settings.consolidation_scope_properties, settings.consolidation_cluster_low_relevance,
                    LINK_RULES),
        "creative": (),
        "decay": (DUE_VERSION, settings.consolidation_score_epsilon, settings.consolidation_decay_importance_threshold),
        "forget": (DUE_VERSION, settings.consolidation_archive_threshold, settings.consolidation_delete_threshold,
                   settings.consolidation_grace_period_days, settings.consolidation_protected_importance,
                   sorted(settings.consolidation_protected_types), settings.consolidation_delete_after_archived_days),
    }.get(task, ())
    return zlib.crc32(repr(shape).encode())


__all__ = ["TASKS", "TaskContext", "TaskFunction", "incremental_version"]
