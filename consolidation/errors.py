"""The service's error types; the HTTP layer maps each to one status code and one JSON shape."""

from __future__ import annotations


class ServiceError(Exception):
    """Base of every error the service reports to a caller."""

    status = 500
    error = "internal_error"
    shown_null: tuple[str, ...] = ()  # extra fields an answer shows even when null (a null that means something)

    def __init__(self, detail: str, **extra):
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


class InvalidInput(ServiceError):
    """The caller sent a value the service cannot accept; `field` names it."""

    status = 400
    error = "invalid_input"

    def __init__(self, field: str, detail: str):
        super().__init__(f"{field}: {detail}", field=field)
        self.field = field
        self.reason = detail


class Unauthorized(ServiceError):
    status = 401
    error = "unauthorized"


class Forbidden(ServiceError):
    """The token is valid but may not do this."""

    status = 403
    error = "forbidden"


class GraphLimit(ServiceError):
    """A write would make one graph more than FALKORDB_GRAPHS_MAX allows."""

    status = 409
    error = "graph_limit"


class NotFound(ServiceError):
    status = 404
    error = "not_found"


class Gone(ServiceError):
    """The thing asked for existed and was deleted; it may still be restorable (the details say until when)."""

    status = 410
    error = "gone"
    shown_null = ("restorable_until",)  # null: erased, nothing can bring it back


class RunInProgress(ServiceError):
    """A consolidation run is already going; `run_id` names it."""

    status = 409
    error = "run_in_progress"

    def __init__(self, run_id: str | None, task: str | None = None):
        super().__init__(f"consolidation run {run_id} is in progress", run_id=run_id, task=task)
        self.run_id = run_id


class RunCancelled(Exception):
    """Raised inside a task at a safe point when an administrator asked its run to stop (never reaches a caller)."""

    def __init__(self, run_id: str):
        super().__init__(f"run {run_id} was cancelled")


class Conflict(ServiceError):
    status = 409
    error = "conflict"


class IdempotencyKeyReused(ServiceError):
    """An Idempotency-Key came back with another request than the one it was first used for."""

    status = 422
    error = "idempotency_key_reused"


class StoreUnavailable(ServiceError):
    """A store cannot be reached or answered with an error that is not the caller's fault."""

    status = 503
    error = "store_unavailable"

    def __init__(self, store: str, detail: str):
        super().__init__(f"{store}: {detail}", store=store)
        self.store = store


class EmbeddingUnavailable(ServiceError):
    """The embedding provider could not turn the texts into vectors (down, refusing, or answering nonsense)."""

    status = 503
    error = "embedding_unavailable"

    def __init__(self, provider: str, detail: str):
        super().__init__(f"embedding provider {provider}: {detail}", provider=provider)
        self.provider = provider


class EmbeddingModelMismatch(ServiceError):
    """Text work under one model on a store whose vectors another model made: the similarities would be noise."""

    status = 409
    error = "embedding_model_mismatch"

    def __init__(self, store_model: str, configured_model: str, detail: str):
        super().__init__(detail, store_model=store_model, configured_model=configured_model)


class NoWorker(ServiceError):
    """Runs compute in worker processes, and none is alive to take this one."""

    status = 503
    error = "no_worker"


class StoreMismatch(ServiceError):
    """An existing store holds data this service cannot use as configured (e.g. another vector size)."""

    error = "store_mismatch"


GRAPH_HEADER = "X-Graph"


class GraphRequired(InvalidInput):
    """The service serves several graphs and none is the default: the request must name one."""

    def __init__(self):
        super().__init__(GRAPH_HEADER, "this service consolidates several graphs and none is the default: "
                                       f"name one in the {GRAPH_HEADER} header")


class UnknownGraph(ServiceError):
    """The request names a graph this service does not serve (or, under a prefix, one that does not exist)."""

    status = 404
    error = "unknown_graph"

    def __init__(self, name: str):
        shown = name if len(name) <= 80 else name[:80] + "..."
        super().__init__(f"{GRAPH_HEADER}: this service has no graph {shown!r}", field=GRAPH_HEADER)
