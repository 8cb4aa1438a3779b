"""Gunicorn configuration, derived from the service's own settings (see consolidation/settings.py)."""

import sys

from consolidation.settings import SettingsError, load_settings

try:
    settings = load_settings()
except SettingsError as exc:
    sys.exit(f"consolidation service cannot start: {exc}")

bind = f"{settings.host}:{settings.port}"
workers = settings.web_concurrency
threads = settings.web_threads
# gthread workers heartbeat from their main thread, so a long request or a background run never looks hung.
worker_class = "gthread"
timeout = 60
graceful_timeout = 90
accesslog = "-"
# %(U)s is the path without the query string: a token someone puts in a URL never reaches the log.
access_log_format = '%(h)s "%(m)s %(U)s" %(s)s %(b)s %(M)sms'


def on_starting(server):
    if server.cfg.workers > 1 and settings.uses_embedded_store:
        sys.exit(
            f"consolidation service cannot start: {server.cfg.workers} workers need store servers "
            "(FALKORDB_HOST and QDRANT_URL); the embedded stores belong to one process. "
            "Run one worker (threads give concurrency) or point the service at FalkorDB and Qdrant servers."
        )


def when_ready(server):
    server.log.info("consolidation service listening on http://%s", bind)


def worker_exit(server, worker):
    app = getattr(worker, "wsgi", None)
    services = getattr(app, "extensions", {}).get("consolidation")
    if services is not None:
        services.close()
