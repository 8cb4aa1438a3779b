"""The request class of the app: JSON bodies are read by the strict reader (json_input), never leniently, and query
parameters holding characters no store takes are refused."""

from __future__ import annotations

from typing import Any

from flask import Request

from ..errors import InvalidInput
from ..json_input import parse_json


class StrictRequest(Request):
    """Whoever asks for the JSON body (a model, a view) gets it from json_input: UTF-8 only, bounded nesting,
    int64 integers, finite floats, no NUL or lone surrogate. A hostile body is a 400 naming the field, even
    for a caller asking `silent=True`; it never becomes None, and so never the defaults of an empty body."""

    _strict_json: Any = Ellipsis

    def get_json(self, force: bool = False, silent: bool = False, cache: bool = True) -> Any | None:
        """The body as strict JSON; None when there is no body at all."""
        if self._strict_json is not Ellipsis:
            return self._strict_json
        raw = self.get_data(cache=True)
        if not raw.strip():
            value = None
        elif not (force or self.is_json):
            raise InvalidInput("body", "must be JSON sent with Content-Type: application/json")
        else:
            value = parse_json(raw)
        self._strict_json = value
        return value


def refuse_unstorable_query(request: Request) -> None:
    """A query parameter with a NUL character is a 400 naming it: FalkorDB cannot take NUL in a parameter (a
    search for `q=%00` was a 500), and no text the service keeps holds one (json_input refuses it in bodies)."""
    for name, value in request.args.items(multi=True):
        if "\x00" in name or "\x00" in value:
            raise InvalidInput(name.replace("\x00", "\\0"), "must not contain a NUL character")
