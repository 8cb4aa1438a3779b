#!/usr/bin/env sh
# Start the service on the embedded stores: make an admin token if none is set, import the sample
# memories into an empty store, then hand over to gunicorn. Called by `make run`.
set -eu
BIN=${BIN:-.venv/bin}
DATA_DIR=${DATA_DIR:-data}
export DATA_DIR
mkdir -p "$DATA_DIR"
if [ -z "${ADMIN_API_TOKEN:-}" ]; then
  if [ ! -s "$DATA_DIR/admin_token" ]; then
    (umask 077; "$BIN/python" -c 'import secrets; print(secrets.token_urlsafe(32))' > "$DATA_DIR/admin_token")
  fi
  ADMIN_API_TOKEN=$(cat "$DATA_DIR/admin_token")
  export ADMIN_API_TOKEN
fi
# The import report (JSON on stdout) is for scripts; its one-line verdict on stderr is what a person reads here.
"$BIN/python" -m consolidation import --if-empty --shift-to-now samples/memories.jsonl >/dev/null
URL="http://${HOST:-127.0.0.1}:${PORT:-8000}"
cat <<MSG

  Memory consolidation service: $URL
  Admin token (also in $DATA_DIR/admin_token): $ADMIN_API_TOKEN

  Try:  curl -s -X POST $URL/consolidate -H "Authorization: Bearer \$(cat $DATA_DIR/admin_token)" \\
             -H 'Content-Type: application/json' -d '{"wait": true}'
        curl -s $URL/consolidate/status -H "Authorization: Bearer \$(cat $DATA_DIR/admin_token)"

MSG
# Runs compute in a worker process the server starts beside it, so no request waits for a run's Python.
CONSOLIDATION_WORKER=${CONSOLIDATION_WORKER:-child}
export CONSOLIDATION_WORKER
exec "$BIN/python" -m gunicorn -c gunicorn.conf.py app:app
