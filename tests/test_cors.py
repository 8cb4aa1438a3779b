"""Cross-origin access: only the configured origins, preflights with the Authorization header, never '*'."""

import pytest

from consolidation.api import create_app
from consolidation.settings import SettingsError, load_settings

from tests.conftest import TOKEN, make_settings

ALLOWED = "https://admin.example.com"


@pytest.fixture
def cors_client(tmp_path, clock):
    from consolidation.service import build_services

    settings = make_settings(tmp_path / "data", cors_origins=(ALLOWED, "http://localhost:5173"))
    services = build_services(settings, clock=clock)
    yield create_app(settings, services=services, start_scheduler=False).test_client()
    services.close()


def preflight(client, origin: str, path: str = "/consolidate/status", headers: str = "Authorization"):
    return client.options(path, headers={"Origin": origin, "Access-Control-Request-Method": "GET",
                                         "Access-Control-Request-Headers": headers})


def test_a_preflight_with_the_authorization_header_from_an_allowed_origin_succeeds(cors_client):
    response = preflight(cors_client, ALLOWED)
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == ALLOWED
    assert "authorization" in response.headers["Access-Control-Allow-Headers"].lower()
    assert "Access-Control-Allow-Credentials" not in response.headers


def test_a_page_on_an_allowed_origin_may_name_the_graph(cors_client):
    response = preflight(cors_client, ALLOWED, headers="Authorization, X-Graph")
    allowed = {h.strip().lower() for h in response.headers["Access-Control-Allow-Headers"].split(",")}
    assert {"authorization", "x-graph"} <= allowed


def test_the_real_request_from_an_allowed_origin_carries_the_header_and_still_needs_the_token(cors_client):
    refused = cors_client.get("/consolidate/status", headers={"Origin": ALLOWED})
    assert refused.status_code == 401
    allowed = cors_client.get("/consolidate/status", headers={"Origin": ALLOWED,
                                                              "Authorization": f"Bearer {TOKEN}"})
    assert allowed.status_code == 200
    assert allowed.headers["Access-Control-Allow-Origin"] == ALLOWED
    assert "Origin" in allowed.headers.get("Vary", "")


@pytest.mark.parametrize("origin", ["https://evil.example.com", "https://admin.example.com.evil.net",
                                    "http://admin.example.com", "null"])
def test_any_other_origin_gets_no_cors_headers(cors_client, origin):
    for response in (preflight(cors_client, origin),
                     cors_client.get("/consolidate/status", headers={"Origin": origin,
                                                                     "Authorization": f"Bearer {TOKEN}"})):
        assert not any(name.lower().startswith("access-control-") for name in response.headers.keys())


def test_no_origins_by_default_means_no_cross_origin_access(client):
    response = preflight(client, ALLOWED)
    assert "Access-Control-Allow-Origin" not in response.headers


def test_origins_are_read_from_a_comma_separated_list(tmp_path):
    settings = load_settings({"ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(tmp_path),
                              "CORS_ORIGINS": " https://a.example.com , http://localhost:3000 "})
    assert settings.cors_origins == ("https://a.example.com", "http://localhost:3000")


@pytest.mark.parametrize("value", ["*", "https://*.example.com", "https://a.example.com/", "a.example.com",
                                   "https://a.example.com/path"])
def test_a_wildcard_or_anything_but_an_origin_is_refused_at_start(tmp_path, value):
    with pytest.raises(SettingsError, match="CORS_ORIGINS"):
        load_settings({"ADMIN_API_TOKEN": TOKEN, "DATA_DIR": str(tmp_path), "CORS_ORIGINS": value})
