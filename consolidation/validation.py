"""Pydantic models applied to caller input, their failures reported as InvalidInput naming the field."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InvalidInput
from .json_input import printable_name

Model = TypeVar("Model", bound=BaseModel)


def checked(model: type[Model], data: Any, field: str = "body", also_accepted: tuple[str, ...] = ()) -> Model:
    """`data` validated by `model`; the first failure becomes an InvalidInput naming its top-level field.
    `also_accepted`: fields taken out of `data` before (the scope properties), named among the accepted ones."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_input(exc, model, field, also_accepted) from None


def invalid_input(exc: ValidationError, model: type[BaseModel], field: str = "body",
                  also_accepted: tuple[str, ...] = ()) -> InvalidInput:
    """The first error of a failed validation, in the words the API has always used for it."""
    error = exc.errors(include_url=False, include_context=False)[0]
    location = error["loc"]
    name = location[0] if location and isinstance(location[0], str) and printable_name(location[0]) else field
    kind = error["type"]
    if kind == "extra_forbidden":
        accepted = sorted({*model.model_fields, *also_accepted})
        return InvalidInput(name, f"is not accepted here (accepted: {', '.join(accepted)})")
    if kind == "missing":
        return InvalidInput(name, "is required")
    if kind in ("bool_type", "bool_parsing"):
        return InvalidInput(name, "must be true or false")
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return InvalidInput(name, "must be a JSON object")
    message = error["msg"].removeprefix("Value error, ")
    return InvalidInput(name, message[:1].lower() + message[1:])
