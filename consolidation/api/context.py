"""Reaching the current app's services, for the route modules."""

from __future__ import annotations

from flask import current_app

from ..service import Services


def services() -> Services:
    """The services of the app handling the current request."""
    return current_app.extensions["consolidation"]
