"""Serving a WSGI app over real HTTP on loopback from a thread of the test process."""

from __future__ import annotations

import threading

from werkzeug.serving import WSGIRequestHandler, make_server


class _Quiet(WSGIRequestHandler):
    def log_request(self, *args) -> None:
        pass


class LoopbackServer:
    """`start()` listens on the port (0: any free one) and serves until `stop()`; it can start again."""

    def __init__(self, app, port: int = 0):
        self.app, self.port = app, port
        self._server = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LoopbackServer:
        self._server = make_server("127.0.0.1", self.port, self.app, threaded=True, request_handler=_Quiet)
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(10)
            self._server = None
