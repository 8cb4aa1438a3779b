"""Consolidation apart from serving: the run queue, the worker process and, for embedded vectors, their server."""
