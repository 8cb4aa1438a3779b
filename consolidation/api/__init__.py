"""The Flask application factory: the one place where settings, services and routes come together."""

from __future__ import annotations

from flask import Flask

from ..logs import configure_logging
from ..service import Services, build_services
from ..settings import Settings, load_settings
from . import consolidate, errors, health, memories, metrics


def create_app(settings: Settings | None = None, services: Services | None = None,
               start_scheduler: bool | None = None) -> Flask:
    """Build an app around its own services; the scheduler starts if the settings enable it."""
    settings = settings or load_settings()
    configure_logging(settings)
    services = services or build_services(settings)
    app = Flask("consolidation")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_request_bytes
    app.json.sort_keys = False
    app.extensions["consolidation"] = services
    errors.register(app)
    for blueprint in (consolidate.blueprint, memories.blueprint, health.blueprint, metrics.blueprint):
        app.register_blueprint(blueprint)
    app.after_request(metrics.count_request)
    if start_scheduler if start_scheduler is not None else settings.consolidation_scheduler_enabled:
        services.scheduler.start()
    return app
