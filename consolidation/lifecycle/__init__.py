"""Every memory's lifecycle: its states and their transitions (states), deletion, restore and reconciling (service),
merging and undoing a merge (merging), updates and forgetting on request (requests)."""

from .service import Lifecycle, decode_vector

__all__ = ["Lifecycle", "decode_vector"]
