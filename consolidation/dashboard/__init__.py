"""The admin dashboard: one page and its static files, whose scripts read the same JSON routes as any client."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, make_response, render_template, send_from_directory

from ..api.openapi import amend, public_operation

blueprint = Blueprint("dashboard", __name__, url_prefix="/dashboard", template_folder="templates")
STATIC = Path(__file__).resolve().parent / "static"

# Only this origin's own files run or load: no CDN, no inline script, and no page may frame the dashboard.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


@blueprint.get("", strict_slashes=False)
@amend(public_operation("dashboard", "the admin dashboard page (it asks for the admin token)", "text/html",
                        {"type": "string"}))
def page():
    """The page itself holds no data and needs no token: it asks for the admin token and keeps it in memory."""
    response = make_response(render_template("dashboard/index.html"))
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response


@blueprint.get("/static/<path:filename>", endpoint="static")
@amend({**public_operation("dashboard", "a file of the page (script, style, vendored Chart.js, licence)", "*/*",
                           {"type": "string"}, **{"404": "no such file"}),
        "parameters": [{"name": "filename", "in": "path", "required": True, "schema": {"type": "string"},
                        "description": "main.js, dashboard.css, vendor/chart.umd.min.js, ..."}]})
def static_file(filename: str):
    """The page's scripts and styles, served from the package (it works offline)."""
    return send_from_directory(STATIC, filename, max_age=3600)
