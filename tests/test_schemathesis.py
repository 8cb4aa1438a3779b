"""Schemathesis over our own /openapi.json, against the real app on the embedded stores (WSGI, in-process):
every documented route, schema-valid and schema-violating requests, each sent with the admin token and without
one, bounded and derandomized. No answer is a 5xx; status codes, content types and bodies are as documented;
every error is JSON in our {error, detail, field} shape."""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import TOKEN

ADMIN = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES_PER_ROUTE = 40


@schemathesis.serializer("application/x-ndjson")
def json_lines(ctx, value) -> bytes:
    """POST /memory/import's body: its documented array of lines, one JSON document a line (anything else the
    negative phase draws is sent as one line)."""
    lines = value if isinstance(value, list) else [value]
    return "\n".join(json.dumps(line) for line in lines).encode("utf-8", "surrogatepass")


def our_error_shape(ctx, response, case) -> None:
    """An answer that is not a success is a JSON object with string `error` and `detail`, and a string `field`
    when present (always, for a 400)."""
    if response.status_code < 400:
        return
    body = json.loads(response.content)
    assert isinstance(body, dict), body
    assert isinstance(body.get("error"), str) and isinstance(body.get("detail"), str), body
    assert isinstance(body.get("field", ""), str), body
    if response.status_code == 400:
        assert isinstance(body.get("field"), str), body


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          our_error_shape]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_route_answers_as_documented(app, services, mode):
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    # Every route of the app is exercised (but the document itself, which schemathesis reads rather than tests).
    routes = {(method, rule.rule) for rule in app.url_map.iter_rules() if rule.rule != "/openapi.json"
              for method in rule.methods - {"HEAD", "OPTIONS"}}
    assert len(operations) == len(routes) > 10

    failures = {}
    for operation in operations:
        @settings(max_examples=EXAMPLES_PER_ROUTE, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=mode))
        def exercise(case):
            for headers in (ADMIN, {}):
                case.validate_response(case.call(headers=headers), checks=CHECKS)
            services.engine.wait_for_background()  # a run started without wait is over before the next case

        try:
            exercise()
        except Unsatisfiable:
            # A route without parameters or body (or with one free string) has no request that breaks its schema.
            assert mode == GenerationMode.NEGATIVE, operation.label
        except Exception as failure:  # every failing route is reported, not only the first
            failures[operation.label] = failure
    assert not failures, "\n\n".join(f"{label}: {failure}" for label, failure in failures.items())
