"""The admin dashboard: one page and its static files, whose scripts read the same JSON routes as any client."""

from __future__ import annotations

from flask import Blueprint, make_response, render_template

blueprint = Blueprint("dashboard", __name__, url_prefix="/dashboard", template_folder="templates",
                      static_folder="static")

# Only this origin's own files run or load: no CDN, no inline script, and no page may frame the dashboard.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


@blueprint.get("", strict_slashes=False)
def page():
    """The page itself holds no data and needs no token: it asks for the admin token and keeps it in memory."""
    response = make_response(render_template("dashboard/index.html"))
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response
