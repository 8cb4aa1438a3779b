"""Every memory's lifecycle: its states and their transitions (states), deletion, restore and reconciling (service)."""

from .service import Lifecycle, decode_vector

__all__ = ["Lifecycle", "decode_vector"]
