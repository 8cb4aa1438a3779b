"""Gunicorn configuration, derived from the service's own settings: `gunicorn -c python:consolidation.gunicorn_conf`."""

import os
import shutil
import sys
import tempfile

from consolidation.logs import gunicorn_log_config
from consolidation.settings import SettingsError, hand_to_workers, load_settings

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
access_log_format = "%(h)s %(m)s %(U)s %(s)s %(b)s %(M)sms"
logconfig_dict = gunicorn_log_config(settings)
# One control socket per instance (gunicorn's default is one per user, which several instances would share).
control_socket = str(settings.data_dir / "gunicorn.ctl")
shared_metrics_directory = None  # set when several workers share their metrics


def _json_error_pages():
    """What gunicorn refuses before the app sees it (a request line over 4,094 bytes: 414; a malformed request:
    400) it answers with an HTML page; this service answers JSON everywhere: {"error", "detail"} instead."""
    import json

    from gunicorn import util

    def write_error(sock, status_int, reason, mesg):
        code = {400: "invalid_input", 414: "uri_too_long", 431: "headers_too_large"}.get(status_int, "http_error")
        body = json.dumps({"error": code, "detail": f"{reason}: {mesg}"})
        head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body.encode())}\r\n\r\n")
        util.write_nonblock(sock, (head + body).encode("latin1", "replace"))

    util.write_error = write_error


_json_error_pages()


def on_starting(server):
    if server.cfg.workers > 1 and settings.uses_embedded_store:
        sys.exit(
            f"consolidation service cannot start: {server.cfg.workers} workers need store servers "
            "(FALKORDB_HOST and QDRANT_URL); the embedded stores belong to one process. "
            "Run one worker (threads give concurrency) or point the service at FalkorDB and Qdrant servers."
        )
    if server.cfg.workers > 1 or settings.consolidation_worker == "child":
        _share_metrics_between_workers(server)


def _share_metrics_between_workers(server):
    """prometheus-client adds up several processes' counters through files in one directory, named by
    PROMETHEUS_MULTIPROC_DIR before any worker imports it; files left by an earlier start would be counted.
    Also for one worker whose runs compute in its worker child (`make run`): the child counts the runs, and
    inherits the directory with the environment."""
    global shared_metrics_directory
    directory = settings.prometheus_multiproc_dir
    if directory is None:
        directory = tempfile.mkdtemp(prefix="consolidation-metrics-")
        hand_to_workers("PROMETHEUS_MULTIPROC_DIR", directory)
    else:
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
    shared_metrics_directory = str(directory)
    server.log.info("metrics of %s workers (and their worker children) shared in %s", server.cfg.workers,
                    directory)


def when_ready(server):
    server.log.info("consolidation service listening on http://%s", bind)


def _stop_left_embedded_server(server):
    """A worker killed after the graceful timeout (a `wait: true` run going on) never closed its stores: the
    embedded FalkorDB it started would live on. Stopped here, its data saved, when a worker exits and when the
    master does (its last reap may come before the killed worker is gone)."""
    if settings.falkordb_host is None:
        from consolidation.stores.embedded_falkor import stop_left_server

        left = stop_left_server(settings.data_dir / "falkordb")
        if left is not None:
            server.log.warning("stopped the embedded FalkorDB (pid %s) a killed worker left running", left)


def on_exit(server):
    _stop_left_embedded_server(server)


def child_exit(server, worker):
    _stop_left_embedded_server(server)
    if shared_metrics_directory:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid, shared_metrics_directory)


def worker_exit(server, worker):
    app = getattr(worker, "wsgi", None)
    services = getattr(app, "extensions", {}).get("consolidation")
    if services is not None:
        services.close()
