"""The reference pages are what the code says: docs/api.md from the OpenAPI document, docs/configuration.md from
the settings object and .env.example (scripts/reference_docs.py writes both; `make docs`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def reference_docs():
    spec = importlib.util.spec_from_file_location("reference_docs", ROOT / "scripts" / "reference_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_api_page_is_the_openapi_document(client):
    docs = reference_docs()
    document = client.get("/openapi.json").get_json()
    written = (ROOT / "docs" / "api.md").read_text()
    assert written == docs.api_page(document), "docs/api.md differs from the routes: run `make docs`"
    for path, item in document["paths"].items():
        for method in item:
            assert f"## {method.upper()} {path}\n" in written


def test_the_api_page_would_change_with_a_route(client):
    docs = reference_docs()
    document = client.get("/openapi.json").get_json()
    document["paths"]["/recall"]["post"]["summary"] = "Something else entirely."
    assert docs.api_page(document) != (ROOT / "docs" / "api.md").read_text()


def test_the_configuration_page_is_the_settings_object():
    from consolidation.settings import Settings

    docs = reference_docs()
    written = (ROOT / "docs" / "configuration.md").read_text()
    assert written == docs.configuration_page(), "docs/configuration.md differs from the settings: run `make docs`"
    for name, field in Settings.model_fields.items():
        assert f"| `{name.upper()}` |" in written
        assert (field.description or "").split(";")[0] in written


def test_the_readme_is_short_and_indexes_every_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    assert len((ROOT / "docs" / "performance.md").read_text().splitlines()) <= 350
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"](docs/{page.name})" in readme, f"{page.name} is not in the README's index"


def test_the_docs_describe_the_product_not_the_issues_that_made_it():
    import re

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        assert not re.search(r"\bissue \d+|\(\w+ part\)", text, re.IGNORECASE), page.name
        for target in re.findall(r"\]\(([^)#:]+\.(?:md|png))(?:#[^)]*)?\)", text):
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which is not there"
