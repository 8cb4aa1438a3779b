"""The service's one typed settings object, read once from the environment and validated."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from . import TASK_NAMES  # the one list of tasks, re-exported for the modules that read it here
from .graphs import GraphSelection, parse_collections

BUILTIN_DIMENSION = 384  # all-MiniLM-L6-v2's
CREATIVE_KINDS = ("explains", "shares_theme", "parallel_context", "same_episode")
TOKEN_FILE = "admin_token"
SCOPE_PROPERTY = re.compile(r"[a-z][a-z0-9_]{0,63}")
# The properties a memory node has of its own: a scope property must be a name the service does not use.
MEMORY_PROPERTIES = frozenset({
    "id", "content", "type", "importance", "confidence", "tags", "timestamp", "last_accessed", "access_count",
    "protected", "protected_reason", "embedding", "relevance_score", "archived", "archived_at", "merged_into",
    "superseded_by", "distinct_from", "restored_at", "created_at", "updated_at", "cluster_size", "superseded_at",
    "change_seq", "fact_terms", "fact_anchors", "fact_least", "fact_stamp", "held_until", "archived_reason",
    "merged_at", "state", "t_valid", "t_invalid", "t_invalid_set_by",
})
ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Seconds = Annotated[int, Field(ge=0)]


class SettingsError(ValueError):
    """A setting is missing or has a value the service cannot accept."""


class Settings(BaseModel):
    """Every setting of the service; field names are the environment variable names in lower case."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    # Graph store (FalkorDB). No host means the embedded falkordblite under data_dir.
    falkordb_host: str | None = Field(None, description="a host name; empty for the embedded FalkorDB")
    falkordb_port: int = Field(6379, ge=1, le=65535, description="a TCP port 1..65535")
    falkordb_password: SecretStr | None = Field(None, description="a password or empty")
    falkordb_graph: str = Field("memories", min_length=1, description="a graph name (the one a request naming "
                                                                     "no graph addresses)")
    falkordb_graphs: tuple[str, ...] = Field(
        (), description="a comma-separated list of graph names and name prefixes ending in * (like tenant_*): "
                        "the graphs this service consolidates; empty for FALKORDB_GRAPH alone")
    falkordb_graphs_max: int = Field(100, ge=1, le=100000, description="an integer >= 1: the most graphs a "
                                                                      "prefix may grow to; a write that would make "
                                                                      "one more is refused")
    # Graphs open at once (each embedded Qdrant collection holds 8 threads): beyond it, or idle this long, the
    # least recently used graph is closed, and opened again when used.
    falkordb_graphs_open_max: int = Field(32, ge=1, le=100000, description="an integer >= 1")
    falkordb_graphs_idle_seconds: float = Field(600.0, gt=0, description="seconds > 0")
    graph_creation: Literal["admin", "any"] = Field(
        "admin", description="admin or any: which token's write may make a new graph under a prefix")

    # Vector store (Qdrant). No URL means the embedded Qdrant Edge shard under data_dir.
    qdrant_url: str | None = Field(None, description="an http(s) URL; empty for the embedded Qdrant")
    qdrant_api_key: SecretStr | None = Field(None, description="an API key or empty")
    qdrant_collection: str = Field("memories", min_length=1, description="the collection of FALKORDB_GRAPH")
    qdrant_collections: dict[str, str] = Field(
        default_factory=dict, description="comma-separated graph=collection pairs; a graph not named here has "
                                          "the collection of its own name")
    vector_size: int = Field(384, ge=2, le=65536, description="an integer 2..65536")
    data_dir: Path = Field(Path("./data"), description="a directory path")

    # Embedding: who turns texts into vectors (memories without an embedding, text recalls, text imports).
    # AutoMem's variables, read as AutoMem reads them; `auto` takes the first provider whose key or URL is set.
    embedding_provider: Literal["auto", "builtin", "openai", "voyage", "ollama", "fastembed", "hash"] = Field(
        "auto", description="auto, builtin, openai, voyage, ollama, fastembed or hash (auto: Voyage, OpenAI or "
                            "Ollama when its key or URL is set, else the built-in all-MiniLM-L6-v2; AutoMem's "
                            "local and placeholder are read as fastembed and hash)")
    embedding_model: str = Field("text-embedding-3-small", min_length=1,
                                 description="the model an OpenAI-compatible endpoint is asked for")
    openai_api_key: SecretStr | None = Field(None, description="an API key or empty")
    openai_base_url: str | None = Field(None, description="an OpenAI-compatible base URL, or empty for "
                                                          "https://api.openai.com/v1")
    voyage_api_key: SecretStr | None = Field(None, description="an API key or empty")
    voyage_model: str = Field("voyage-4", min_length=1, description="a Voyage model name")
    voyage_base_url: str = Field("https://api.voyageai.com/v1", description="the Voyage API's base URL")
    ollama_base_url: str | None = Field(None, description="an Ollama server URL (http://localhost:11434), or empty")
    ollama_model: str | None = Field(None, description="an Ollama embedding model (empty: nomic-embed-text)")
    fastembed_cache_path: Path | None = Field(None, description="the directory holding fastembed's model files, "
                                                                "or empty (AUTOMEM_MODELS_DIR, else "
                                                                "~/.config/automem/models)")
    automem_models_dir: Path | None = Field(None, description="AutoMem's fastembed model directory, or empty")
    embedding_timeout_seconds: float = Field(30.0, gt=0, le=600, description="seconds 0..600 a provider's "
                                                                           "answer is waited for")
    embedding_retries: int = Field(2, ge=0, le=10, description="an integer 0..10: retries of a failed provider "
                                                               "call, with backoff")
    embedding_batch_size: int = Field(64, ge=1, le=2048, description="an integer 1..2048: texts per provider call")
    embedding_threads: int = Field(1, ge=1, le=64, description="an integer 1..64: CPU threads the built-in model "
                                                               "takes (the rest serve requests)")

    # Authentication. The admin token is required: without it the service would have to run open.
    admin_api_token: SecretStr = Field(
        description="a secret of at least 16 characters (unset: the one in DATA_DIR/admin_token, if any)")
    api_token: SecretStr | None = Field(None, description="a secret for the memory endpoints (any scope's "
                                                          "memories), or empty")
    api_tokens: SecretStr | None = Field(
        None, description="a JSON object from token to the scope it is bound to, a value for each of "
                          "CONSOLIDATION_SCOPE_PROPERTIES ({\"tok-1\": {\"user_id\": \"u1\"}}): such a token reads, "
                          "recalls, writes and forgets only that scope's memories; or empty")

    # Scheduler.
    consolidation_scheduler_enabled: bool = Field(True, description="true or false")
    # Where runs compute: `inline` in the serving process (a library's or a test's app), `child` in a worker
    # process the serving process starts beside it (make run, the image), `external` in `consolidation worker`
    # processes started on their own (compose's worker service; store servers only).
    consolidation_worker: Literal["inline", "child", "external"] = Field(
        "inline", description="inline, child or external")
    consolidation_tick_seconds: float = Field(60.0, gt=0, description="a number of seconds > 0")
    consolidation_decay_interval_seconds: Seconds = Field(86400, description="seconds >= 0 (0 disables)")
    consolidation_dedup_interval_seconds: Seconds = Field(86400, description="seconds >= 0 (0 disables)")
    consolidation_creative_interval_seconds: Seconds = Field(604800, description="seconds >= 0 (0 disables)")
    consolidation_cluster_interval_seconds: Seconds = Field(2592000, description="seconds >= 0 (0 disables)")
    consolidation_forget_interval_seconds: Seconds = Field(0, description="seconds >= 0 (0 disables)")
    consolidation_entities_interval_seconds: Seconds = Field(0, description="seconds >= 0 (0 disables)")
    consolidation_full_pass_interval_seconds: Seconds = Field(
        604800, description="seconds >= 0 between full passes of each task, which in between work on what "
                            "changed (or came due) since their last run (0: every run is a full pass)")
    consolidation_history_limit: int = Field(20, ge=1, le=1000, description="an integer 1..1000")
    consolidation_lease_seconds: float = Field(
        60.0, ge=3, le=3600, description="seconds 3..3600 a run's lease lasts without renewal"
    )

    # Decay.
    consolidation_decay_importance_threshold: Fraction | None = Field(
        0.3, description="a number 0..1, or empty to decay every memory"
    )
    consolidation_score_epsilon: float = Field(
        0.0005, ge=0.0, le=0.1, description="a number 0..0.1: smaller score changes are not rewritten"
    )

    # Memory hygiene (dedup).
    consolidation_dedup_similarity: Fraction = Field(
        0.75, description="a cosine similarity 0..1: pairs less similar are never compared (the neighbour "
                          "search's threshold; the judge's own thresholds are higher)"
    )
    consolidation_dedup_vectors: Literal["auto", "built-in", "client"] = Field(
        "auto", description="auto, built-in or client: whose thresholds the judge uses (auto: the hashing "
                            "embedder's for two memories it embedded, a sentence model's for the others)")
    consolidation_dedup_same_fact_similarity: Fraction | None = Field(
        None, description="a cosine similarity 0..1 two texts with no term added need (a sentence model's "
                          "vectors; empty: the calibrated default; `consolidation calibrate` finds your model's)")
    consolidation_dedup_similarity_per_added_term: float | None = Field(
        None, ge=0, le=0.5, description="a number 0..0.5 the similarity needed rises by per term one text adds "
                                        "(a sentence model's vectors; empty: the calibrated default)")
    consolidation_dedup_similarity_per_added_share: float | None = Field(
        None, ge=0, le=1, description="a number 0..1 the similarity needed rises by, times the share of a text's "
                                      "terms the other lacks (a sentence model's vectors; empty: the calibrated "
                                      "default)")
    consolidation_dedup_swapped_similarity: Fraction | None = Field(
        None, description="a cosine similarity 0..1 two texts each with a term the other lacks need at least "
                          "(a sentence model's vectors; empty: the calibrated default)")
    consolidation_dedup_model_judge: bool = Field(
        False, description="true or false: ask the SUMMARIZER_LLM_URL model about the pairs the rules cannot "
                           "settle (needs SUMMARIZER_LLM_URL)")
    consolidation_dedup_model_budget_pairs: int = Field(
        200, ge=0, description="an integer >= 0: most pairs a run asks the model about")
    consolidation_dedup_model_budget_seconds: float = Field(
        60.0, gt=0, description="seconds > 0 a run spends asking the model at most")
    consolidation_dedup_model_batch: int = Field(
        20, ge=1, le=100, description="an integer 1..100: pairs asked about in one request")

    # Creative associations.
    consolidation_creative_sample_size: int = Field(30, ge=2, le=1000, description="an integer 2..1000")
    consolidation_scope_properties: tuple[str, ...] = Field(
        (), description="a comma-separated list of memory properties that partition memories (like "
                        "user_id,agent_id); empty for one scope")
    consolidation_creative_kinds: tuple[str, ...] = Field(
        ("explains", "same_episode"),
        description="a comma-separated list of explains, shares_theme, parallel_context, same_episode (the edge "
                    "kinds creative writes; kinds that measured below 0.9 precision are off by default)",
    )
    consolidation_episode_seconds: Seconds = Field(
        3600, description="seconds >= 0: memories of one scope stated within this long of each other are one "
                          "episode, where each is linked to its closest partner (same_episode; 0 disables)")
    consolidation_episode_similarity: Fraction = Field(
        0.5, description="a cosine similarity 0..1: the least a same_episode link needs")

    # Clustering.
    consolidation_cluster_similarity: Fraction = Field(0.75, description="a cosine similarity 0..1")
    consolidation_cluster_min_size: int = Field(5, ge=2, le=100000, description="an integer >= 2")
    consolidation_cluster_low_relevance: bool = Field(
        True, description="true or false: cluster current memories whatever their relevance score (false: only "
                          "those scored above 0.3, as AutoMem's clustering)")
    consolidation_cluster_exact_limit: int = Field(
        10000, ge=0, description="an integer >= 0: up to this many memories the similarity graph is exact"
    )
    consolidation_cluster_probe_cells: int = Field(
        2, ge=1, le=1000, description="an integer 1..1000: neighbouring cells each cell is compared with"
    )
    summarizer_llm_url: str | None = Field(
        None, description="an OpenAI-compatible base URL (e.g. http://localhost:11434/v1), or empty for none"
    )
    summarizer_llm_model: str = Field("gpt-4o-mini", min_length=1, description="a model name")
    summarizer_llm_api_key: SecretStr | None = Field(None, description="an API key or empty")
    summarizer_llm_timeout_seconds: float = Field(20.0, gt=0, le=600, description="seconds 0..600")

    # Forgetting.
    consolidation_grace_period_days: float = Field(90.0, ge=0, description="a number of days >= 0")
    consolidation_protected_importance: Fraction = Field(0.7, description="a number 0..1")
    consolidation_protected_types: tuple[str, ...] = Field(
        ("Decision", "Insight"), description="a comma-separated list of memory types"
    )
    consolidation_archive_threshold: Fraction = Field(0.0, description="a relevance 0..1 (0 disables)")
    consolidation_delete_threshold: Fraction = Field(0.0, description="a relevance 0..1 (0 disables)")
    consolidation_delete_after_archived_days: float = Field(
        30.0, ge=0, description="a number of days >= 0: how long a memory stays archived before forget may delete "
                                "it (a memory below the delete threshold is archived first); 0 deletes at once")
    consolidation_tombstone_retention_days: float = Field(30.0, ge=0, description="a number of days >= 0")
    consolidation_restore_hold_days: float = Field(
        30.0, ge=0, description="a number of days >= 0: how long no automatic run archives, deletes or merges a "
                                "memory an administrator restored")

    # Recall.
    recall_associated: bool = Field(
        True, description="true or false: a current recall of k >= 5 gives its last place to its best answer's "
                          "same_episode partner (a request's \"associated\" overrides it)")
    recall_associated_similarity: Fraction = Field(
        0.5, description="a cosine similarity 0..1: how similar to the query the best answer must be for that")

    # Reports and input limits.
    consolidation_report_limit: int = Field(100, ge=1, le=100000, description="an integer >= 1")
    consolidation_report_kept_bytes: int = Field(
        256_000_000, ge=0, description="a number of bytes >= 0: the report lists kept to be paged, the newest "
                                       "runs' first (a forget decision takes about 200)")
    max_content_chars: int = Field(20000, ge=1, description="an integer >= 1")
    max_request_bytes: int = Field(16 * 1024 * 1024, ge=1024, description="a number of bytes >= 1024")

    # HTTP server and logs.
    host: str = Field("127.0.0.1", description="an interface address")
    cors_origins: tuple[str, ...] = Field(
        (), description="a comma-separated list of origins (scheme://host[:port]) that browsers may call from; "
                        "empty for none")
    port: int = Field(8000, ge=1, le=65535, description="a TCP port 1..65535")
    web_concurrency: int = Field(1, ge=1, le=64, description="a number of worker processes 1..64")
    web_threads: int = Field(8, ge=1, le=256, description="a number of threads per worker 1..256")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="DEBUG, INFO, WARNING or ERROR")
    log_format: Literal["kv", "json"] = Field("kv", description="kv or json")
    prometheus_multiproc_dir: Path | None = Field(
        None, description="a directory where gunicorn workers share metrics (gunicorn.conf.py makes one), or empty"
    )

    @field_validator(
        "falkordb_host", "falkordb_password", "qdrant_url", "qdrant_api_key", "api_token", "api_tokens",
        "summarizer_llm_url", "summarizer_llm_api_key", "prometheus_multiproc_dir",
        "consolidation_decay_importance_threshold", "consolidation_dedup_same_fact_similarity",
        "consolidation_dedup_similarity_per_added_term", "consolidation_dedup_similarity_per_added_share",
        "consolidation_dedup_swapped_similarity", "openai_api_key", "openai_base_url", "voyage_api_key",
        "ollama_base_url", "ollama_model", "fastembed_cache_path", "automem_models_dir", mode="before",
    )
    @classmethod
    def _empty_means_unset(cls, value):
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("consolidation_protected_types", "consolidation_creative_kinds", "cors_origins",
                     "consolidation_scope_properties", "falkordb_graphs", mode="before")
    @classmethod
    def _split_list(cls, value):
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("falkordb_graphs")
    @classmethod
    def _graph_entries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        GraphSelection.parse(value, "memories", "memories", {})  # raises naming a bad entry
        return value

    @field_validator("qdrant_collections", mode="before")
    @classmethod
    def _collection_pairs(cls, value):
        return parse_collections(value) if isinstance(value, str | Mapping) else value

    @field_validator("consolidation_creative_kinds")
    @classmethod
    def _known_kinds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(value) - set(CREATIVE_KINDS))
        if unknown:
            raise ValueError(f"unknown kind {unknown[0]!r}")
        return value

    @field_validator("consolidation_scope_properties")
    @classmethod
    def _scope_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not SCOPE_PROPERTY.fullmatch(name):
                raise ValueError(f"{name!r} is not a property name (lower-case letters, digits, _)")
            if name in MEMORY_PROPERTIES:
                raise ValueError(f"{name!r} is a memory field of its own, not a scope")
        if len(set(value)) != len(value):
            raise ValueError("a property is named twice")
        return value

    @field_validator("cors_origins")
    @classmethod
    def _exact_origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # Every route takes a token: a wildcard would let any page spend an admin's token.
        for origin in value:
            if not ORIGIN.fullmatch(origin):
                raise ValueError(f"{origin!r} is not an origin like https://admin.example.com (no '*', path or "
                                 "trailing slash)")
        return tuple(dict.fromkeys(origin.lower() for origin in value))

    @field_validator("embedding_provider", mode="before")
    @classmethod
    def _automem_provider_names(cls, value):
        if isinstance(value, str):
            value = value.strip().lower() or "auto"
            return {"local": "fastembed", "placeholder": "hash"}.get(value, value)
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value):
        return value.upper() if isinstance(value, str) else value

    @field_validator("admin_api_token")
    @classmethod
    def _strong_token(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value().strip()) < 16:
            raise ValueError("must be at least 16 characters")
        return value

    @model_validator(mode="after")
    def _one_process_for_embedded_stores(self) -> Settings:
        if self.web_concurrency > 1 and self.uses_embedded_store:
            raise ValueError(
                "WEB_CONCURRENCY > 1 needs store servers (FALKORDB_HOST and QDRANT_URL): "
                "the embedded stores belong to one process; use WEB_THREADS for concurrency"
            )
        return self

    @model_validator(mode="after")
    def _external_workers_need_servers(self) -> Settings:
        if self.consolidation_worker == "external" and self.uses_embedded_store:
            raise ValueError(
                "CONSOLIDATION_WORKER=external needs store servers (FALKORDB_HOST and QDRANT_URL): a worker started "
                "on its own cannot reach another process's embedded stores; use child"
            )
        return self

    @model_validator(mode="after")
    def _provider_can_make_the_vectors(self) -> Settings:
        if self.embedding_provider == "openai" and self.openai_api_key is None:
            raise ValueError("EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY")
        if self.embedding_provider == "voyage" and self.voyage_api_key is None:
            raise ValueError("EMBEDDING_PROVIDER=voyage needs VOYAGE_API_KEY")
        if self.chosen_embedding_provider == "builtin" and self.vector_size != BUILTIN_DIMENSION:
            raise ValueError(f"the built-in model makes {BUILTIN_DIMENSION}-dimensional vectors: VECTOR_SIZE="
                             f"{self.vector_size} needs another EMBEDDING_PROVIDER (or VECTOR_SIZE="
                             f"{BUILTIN_DIMENSION})")
        return self

    @property
    def chosen_embedding_provider(self) -> str:
        """The provider in force: `auto` resolved in AutoMem's order (Voyage, OpenAI, Ollama), else built-in."""
        if self.embedding_provider != "auto":
            return self.embedding_provider
        if self.voyage_api_key is not None:
            return "voyage"
        if self.openai_api_key is not None:
            return "openai"
        if self.ollama_base_url or self.ollama_model:
            return "ollama"
        return "builtin"

    @model_validator(mode="after")
    def _model_judge_needs_a_model(self) -> Settings:
        if self.consolidation_dedup_model_judge and not self.summarizer_llm_url:
            raise ValueError("CONSOLIDATION_DEDUP_MODEL_JUDGE=true needs SUMMARIZER_LLM_URL: the model it asks")
        return self

    @model_validator(mode="after")
    def _one_collection_per_graph(self) -> Settings:
        selection = self.graph_selection
        collections = [selection.collection(name) for name in selection.names]
        if len(set(collections)) != len(collections):
            raise ValueError("two of the graphs would share a Qdrant collection: give each its own in "
                             "QDRANT_COLLECTIONS (graph=collection)")
        return self

    @model_validator(mode="after")
    def _tokens_bound_to_scopes(self) -> Settings:
        self.scoped_tokens  # parsed and checked: raises naming what is wrong
        return self

    @property
    def scoped_tokens(self) -> dict[str, dict[str, str]]:
        """API_TOKENS read: each scoped token and the scope it is bound to (a value per scope property)."""
        if self.api_tokens is None:
            return {}
        try:
            tokens = json.loads(self.api_tokens.get_secret_value())
        except ValueError:
            raise ValueError("API_TOKENS must be a JSON object (token -> scope)") from None
        if not isinstance(tokens, dict):
            raise ValueError("API_TOKENS must be a JSON object (token -> scope)")
        if tokens and not self.consolidation_scope_properties:
            raise ValueError("API_TOKENS binds tokens to scopes, but CONSOLIDATION_SCOPE_PROPERTIES names none")
        others = {self.admin_api_token.get_secret_value(), *([self.api_token.get_secret_value()] if self.api_token
                                                              else [])}
        for number, (token, scope) in enumerate(tokens.items(), 1):
            where = f"API_TOKENS' token {number}"  # never the token itself
            if len(token.strip()) < 16 or token in others:
                raise ValueError(f"{where}: a token must be at least 16 characters, and not the admin token or "
                                 "API_TOKEN")
            if not isinstance(scope, dict) or set(scope) != set(self.consolidation_scope_properties) or not all(
                    isinstance(v, str) and v for v in scope.values()):
                raise ValueError(f"{where}: its scope must give a non-empty string for each of "
                                 f"{', '.join(self.consolidation_scope_properties)}")
        return tokens

    @property
    def record_key(self) -> bytes:
        """The key of the digests request records keep (a purge's match, a supersede's fingerprint): derived
        from the admin token, so every replica has the same one and no store holds it."""
        return hmac.new(self.admin_api_token.get_secret_value().encode(), b"consolidation request records",
                        hashlib.sha256).digest()

    @property
    def graph_selection(self) -> GraphSelection:
        """The graphs this service consolidates and the collection of each."""
        return GraphSelection.parse(self.falkordb_graphs, self.falkordb_graph, self.qdrant_collection,
                                    self.qdrant_collections)

    @property
    def uses_embedded_store(self) -> bool:
        return self.falkordb_host is None or self.qdrant_url is None

    def in_force(self) -> dict[str, Any]:
        """Every setting as the service runs with it, secrets shown only as set or not (never their value)."""
        shown: dict[str, Any] = {}
        for name, value in self.model_dump().items():
            if isinstance(getattr(self, name), SecretStr):
                value = "(set)"
            elif isinstance(value, Path):
                value = str(value)
            elif isinstance(value, tuple):
                value = list(value)
            shown[name] = value
        return shown

    @property
    def task_intervals(self) -> dict[str, int]:
        """Seconds between scheduled runs of each task; 0 means never."""
        return {name: getattr(self, f"consolidation_{name}_interval_seconds") for name in TASK_NAMES}


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build the settings from an environment mapping (the process environment by default)."""
    environ = os.environ if environ is None else environ
    fields = Settings.model_fields
    values = {name.lower(): value for name, value in environ.items() if name.lower() in fields}
    if not values.get("admin_api_token", "").strip():
        token = _saved_token(Path(values.get("data_dir") or Settings.model_fields["data_dir"].default))
        if token:
            values["admin_api_token"] = token
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise SettingsError(_explain(exc, values)) from None


def hand_to_workers(name: str, value: str) -> None:
    """Set a variable in the environment the gunicorn workers inherit: their settings (and prometheus-client,
    which reads PROMETHEUS_MULTIPROC_DIR itself) see it. The one place besides load_settings that touches it."""
    os.environ[name] = value


def child_environment(overrides: Mapping[str, str]) -> dict[str, str]:
    """The environment a child process of the service starts with: this one's (it reads its settings from it),
    with `overrides`. With load_settings and hand_to_workers, the only places that touch the environment."""
    return {**os.environ, **overrides}


def _saved_token(data_dir: Path) -> str | None:
    """The token `make run` keeps in DATA_DIR/admin_token, used when ADMIN_API_TOKEN is not set."""
    try:
        return (data_dir / TOKEN_FILE).read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _explain(exc: ValidationError, values: Mapping[str, str]) -> str:
    """Turn pydantic's errors into one line per variable: its name, what was given, what it accepts."""
    lines = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else ""
        info = Settings.model_fields.get(field)
        if info is None:
            lines.append(error["msg"].removeprefix("Value error, "))
            continue
        given = " is not set" if field not in values else f"={_shown(field, values[field])}"
        lines.append(f"{field.upper()}{given}: {error['msg'].removeprefix('Value error, ')}; "
                     f"accepts {info.description}")
    return "invalid settings:\n  " + "\n  ".join(lines)


def _shown(field: str, value: str) -> str:
    """Quote a given value for an error message, hiding secrets."""
    secret = "token" in field or "password" in field or "api_key" in field
    return "'***'" if secret else repr(value)
