"""Admin routes of entity hygiene: the alias merges the entities task made, and undoing one."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify
from pydantic import BaseModel, Field

from ..errors import InvalidInput, NotFound
from ..stores.entities import EntityStore
from ..timeutil import to_iso, utc_now
from .auth import require_admin
from .context import graph
from .inspection import PageInfo, PageQuery
from .models import ErrorBody
from .openapi import ADMIN, addresses_graph, amend, answers, api

blueprint = addresses_graph(Blueprint("entities", __name__))
ENTITY_ID = {"parameters": [{"name": "entity_id", "in": "path", "required": True, "schema": {"type": "string"},
                             "description": "the id of the alias entity the merge folded into its canonical"}]}


class EntityMerge(BaseModel):
    id: str
    state: str = Field(description="pending (being written), done, restoring, restored")
    canonical_id: str
    alias_id: str
    reason: str | None
    created_at: str | None
    moved: list[str] = Field(description="memories the canonical was not referenced in before: REFERENCED_IN moved")
    canonical_aliases: list[str] = Field(description="the canonical's aliases before the merge")
    added_aliases: list[str] = Field(description="the alias's slug and aliases, added to the canonical's")
    restored_at: str | None = None


class EntityMergePage(PageInfo):
    items: list[EntityMerge]


class Unmerged(BaseModel):
    alias_id: str
    canonical_id: str
    edges_restored: int
    restored_at: str


@blueprint.get("/hygiene/entity-merges")
@require_admin
@api.validate(query=PageQuery, resp=answers(HTTP_200=EntityMergePage), security=ADMIN, tags=["hygiene"])
def entity_merges(query: PageQuery):
    """Every alias merge of the entities task, newest first, with its reason and state."""
    items, total = _store().merges(query.limit, query.offset)
    page = EntityMergePage(items=[_shown(item) for item in items], total=total, **query.model_dump())
    return jsonify(page.model_dump(mode="json"))


@blueprint.post("/entities/<entity_id>/unmerge")
@require_admin
@api.validate(resp=answers(HTTP_200=Unmerged, HTTP_404=ErrorBody), security=ADMIN, tags=["hygiene"])
@amend(ENTITY_ID)
def unmerge(entity_id: str):
    """Undo the merge of this alias entity: its REFERENCED_IN edges back, the canonical's taken away where it
    gained them, the aliases it added removed; the two are kept apart from then on (404 if it is not merged)."""
    if not entity_id or len(entity_id) > 256:
        raise InvalidInput("entity_id", "must be an entity id of 1..256 characters")
    undone = _store().undo(entity_id, to_iso(utc_now()))
    if undone is None:
        raise NotFound(f"entity {entity_id} is not merged into another (or its merge is being undone)")
    return jsonify(undone)


def _store() -> EntityStore:
    addressed = graph()
    addressed.stores.ensure_ready()
    return EntityStore(addressed.stores.graph.falkor, addressed.stores.graph.scoping)


def _shown(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record.get(key) for key in EntityMerge.model_fields}
