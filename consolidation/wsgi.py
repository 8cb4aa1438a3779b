"""The WSGI application gunicorn serves: `consolidation.wsgi:app` (app.py at the root re-exports it)."""

import sys

from consolidation.api import create_app
from consolidation.settings import SettingsError

try:
    app = create_app()
except SettingsError as exc:
    sys.exit(f"consolidation service cannot start: {exc}")
