"""WSGI entry point for gunicorn: `gunicorn -c gunicorn.conf.py app:app`."""

import sys

from consolidation.api import create_app
from consolidation.settings import SettingsError

try:
    app = create_app()
except SettingsError as exc:
    sys.exit(f"consolidation service cannot start: {exc}")
