"""Gunicorn configuration for a checkout; the settings and hooks live in the package (consolidation/gunicorn_conf.py)."""

from consolidation.gunicorn_conf import *  # noqa: F401,F403
