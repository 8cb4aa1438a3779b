"""Composition: builds the stores, engine, memory service and scheduler of one process from the settings."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from .embedding import Embedder, HashingEmbedder
from .engine import ConsolidationEngine
from .ingest import MemoryService
from .scheduler import ConsolidationScheduler
from .settings import Settings
from .stores import Stores, open_stores
from .stores.inspection import InspectionStore
from .summaries import HeuristicSummarizer, LLMSummarizer, Summarizer
from .timeutil import utc_now

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    stores: Stores
    engine: ConsolidationEngine
    memories: MemoryService
    scheduler: ConsolidationScheduler
    inspection: InspectionStore

    def close(self) -> None:
        """Stop the scheduler, let background runs finish, then release the stores; safe to call twice."""
        self.scheduler.stop()
        self.engine.wait_for_background(timeout=60)
        self.stores.close()


def build_services(settings: Settings, clock: Callable[[], datetime] = utc_now,
                   embedder: Embedder | None = None) -> Services:
    stores = open_stores(settings)
    embedder = embedder or HashingEmbedder(settings.vector_size)
    engine = ConsolidationEngine(settings, stores, embedder, summarizer_for(settings), clock)
    memories = MemoryService(settings, stores, embedder, engine.lifecycle, clock)
    scheduler = ConsolidationScheduler(engine, settings.consolidation_tick_seconds)
    return Services(settings, stores, engine, memories, scheduler, InspectionStore(stores.graph.falkor))


def summarizer_for(settings: Settings) -> Summarizer:
    heuristic = HeuristicSummarizer()
    if not settings.summarizer_llm_url:
        return heuristic
    api_key = settings.summarizer_llm_api_key.get_secret_value() if settings.summarizer_llm_api_key else None
    return LLMSummarizer(settings.summarizer_llm_url, settings.summarizer_llm_model, api_key,
                         settings.summarizer_llm_timeout_seconds, fallback=heuristic)
