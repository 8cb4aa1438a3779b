"""WSGI entry point for gunicorn from a checkout: `gunicorn -c gunicorn.conf.py app:app`."""

from consolidation.wsgi import app  # noqa: F401
