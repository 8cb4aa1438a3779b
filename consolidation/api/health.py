"""Liveness and store reachability for load balancers, without a token; only the admin token sees why a store is down."""

from __future__ import annotations

from flask import Blueprint, jsonify

from .auth import is_admin
from .context import services
from .models import Health
from .openapi import PUBLIC, answers, api

blueprint = Blueprint("health", __name__)


@blueprint.get("/health")
@api.validate(resp=answers(HTTP_200=Health, HTTP_503=(Health, "a store is down"), common_errors=False),
              security=PUBLIC, tags=["operations"])
def health():
    """Whether each store answers now (503 naming the one that is down; why, with the admin token only)."""
    svc = services()
    stores = svc.health()
    healthy = all(s["ok"] for s in stores.values())
    if not is_admin():
        # Unauthenticated callers learn which store is down, not its address or the error that names it.
        stores = {name: {"ok": state["ok"]} for name, state in stores.items()}
    body = {
        "status": "ok" if healthy else "degraded",
        "stores": stores,
        "embedded": svc.settings.uses_embedded_store,
        "scheduler_alive": svc.scheduler_alive(),
    }
    return jsonify(body), 200 if healthy else 503
