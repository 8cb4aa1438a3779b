"""Liveness and store reachability, without authentication (for load balancers and compose healthchecks)."""

from __future__ import annotations

from flask import Blueprint, jsonify

from .context import services

blueprint = Blueprint("health", __name__)


@blueprint.get("/health")
def health():
    svc = services()
    stores = svc.stores.health()
    healthy = all(s["ok"] for s in stores.values())
    body = {
        "status": "ok" if healthy else "degraded",
        "stores": stores,
        "embedded": svc.stores.embedded,
        "scheduler_alive": svc.scheduler.alive,
    }
    return jsonify(body), 200 if healthy else 503

