"""Moving a store to the configured model: every vector another model made, made again from its memory's text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .lifecycle import Lifecycle
from .vector_space import VectorSpace

# Memories embedded and written at a time: each chunk is done whole, so a kill loses at most one chunk's work.
CHUNK = 256


def reembed(space: VectorSpace, lifecycle: Lifecycle, dry_run: bool, progress: Callable[[int, int], None],
            stop: Callable[[], bool] = lambda: False) -> dict[str, Any]:
    """Re-embed what the configured model did not make. Resumable: the store is marked as moving first, each
    chunk's vectors are written before its nodes say so, and a new start takes up what is still another model's.
    The record names the new model only when nothing is left."""
    models = space.models
    before = space.state()
    target = space.configured_model
    ids, by_model = models.not_made_by(target)
    report = {"dry_run": dry_run, "store_model": before.store_model, "configured_model": target,
              "memories_to_reembed": len(ids),
              "from_models": {("(none named)" if m is None else m): n for m, n in sorted(by_model.items(),
                                                                                       key=lambda kv: -kv[1])}}
    if dry_run:
        return report
    if ids or not before.matches:
        models.record(before.store_model, moving_to=target)
        space.forget()
    done = 0
    progress(done, len(ids))
    for start in range(0, len(ids), CHUNK):
        if stop():
            return {**report, "reembedded": done, "finished": False}
        lifecycle.embed_again(ids[start:start + CHUNK])
        done += len(ids[start:start + CHUNK])
        progress(done, len(ids))
    models.record(target)
    space.forget()
    return {**report, "reembedded": done, "finished": True, "store_model_now": target}
