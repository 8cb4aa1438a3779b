"""Where and when runs compute: the scheduler and its schedule, the runners, the run queue, the worker process, and
for embedded vectors, their server."""
