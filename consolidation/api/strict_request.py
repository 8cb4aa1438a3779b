"""The request class of the app: JSON bodies are read by the strict reader (json_input), never leniently, and a URL
or header holding what no store takes, or what could be read two ways, is refused before any route sees it."""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import unquote_to_bytes

from flask import Request
from gunicorn.http.errors import ParseException

from ..errors import InvalidInput
from ..json_input import parse_json, printable_name

NUL = "must not contain a NUL character"
NOT_UTF8 = "is not valid UTF-8 once percent-decoded (percent-encode the UTF-8 bytes of the text)"
# What the server raises reading a body the client sent wrong: gunicorn's parse errors (a malformed chunk was a
# 500), and an I/O error of the stream (the client gone, or too slow).
UNREADABLE_BODY = (ParseException, OSError)


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
            if value is None:  # read as no body, `null` would get the defaults: for /consolidate, a real run
                raise InvalidInput("body", "must be a JSON object, not null (no body at all takes the defaults)")
        self._strict_json = value
        return value

    def get_data(self, cache: bool = True, as_text: bool = False, parse_form_data: bool = False) -> Any:
        """The body's bytes; one the server cannot read (gunicorn: a malformed chunk) is the caller's 400."""
        try:
            return super().get_data(cache, as_text, parse_form_data)
        except UNREADABLE_BODY as exc:
            raise InvalidInput("body", f"could not be read ({str(exc) or type(exc).__name__})") from None


def refuse_unreadable_head(request: Request) -> None:
    """A path or query parameter that is not UTF-8 (werkzeug would read it as U+FFFD or keep it percent-encoded:
    another text than was sent), a NUL in one or in a header (FalkorDB cannot take NUL in a parameter: a search
    for `q=%00` was a 500), and a query parameter given twice (which one counts would be a guess) are each a
    400 naming it."""
    _check_path(request)
    _check_query(request)
    for name, value in request.headers.items():
        if "\x00" in name or "\x00" in value:
            raise InvalidInput(_named(name, "header"), NUL)


def _check_path(request: Request) -> None:
    arguments = request.view_args or {}
    if not _wsgi_utf8(request.environ.get("PATH_INFO", "")):
        # The routing read the bytes as U+FFFD: the parameter holding one is the one sent wrong.
        raise InvalidInput(next((name for name, value in arguments.items() if "\ufffd" in str(value)), "path"),
                           NOT_UTF8)
    for name, value in arguments.items():
        if "\x00" in str(value):
            raise InvalidInput(name, NUL)


def _check_query(request: Request) -> None:
    for pair in request.query_string.split(b"&"):
        name, _, value = (unquote_to_bytes(part.replace(b"+", b" ")) for part in pair.partition(b"="))
        if not (_utf8(name) and _utf8(value)):
            raise InvalidInput(_named(name.decode("utf-8", "backslashreplace")), NOT_UTF8)
    given = Counter(name for name, _ in request.args.items(multi=True))
    for name, value in request.args.items(multi=True):
        if "\x00" in name or "\x00" in value:
            raise InvalidInput(_named(name), NUL)
        if given[name] > 1:
            raise InvalidInput(_named(name), f"is given {given[name]} times; give it once")


def _named(name: str, unnamed: str = "query") -> str:
    """A parameter's or header's name as an error's field: NUL spelt out, and one unfit to echo left unnamed."""
    name = name.replace("\x00", "\\0")
    return name if name and printable_name(name) else unnamed


def _wsgi_utf8(text: str) -> bool:
    """Whether a WSGI string (its bytes as latin-1, PEP 3333) holds UTF-8."""
    try:
        return _utf8(text.encode("latin-1"))
    except UnicodeEncodeError:  # not bytes as latin-1: a server that decoded it already
        return True


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
