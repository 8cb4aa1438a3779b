"""UTC time helpers: ISO-8601 strings in the stores, aware datetimes and day counts in the code."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import numpy as np

from .slices import joined, slices

SECONDS_PER_DAY = 86400.0
UTC_SUFFIX = b"+00:00"
CANONICAL_LENGTHS = (25, 32)  # to_iso's spellings, without and with microseconds
CANONICAL_WIDTH = 33  # bytes a text is read into: one more than the longest spelling, so a longer text shows


class TimeOutOfRange(ValueError):
    """A well-formed time that cannot be represented in UTC."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def to_iso(moment: datetime) -> str:
    """The store's spelling of a time: ISO-8601 in UTC with an explicit offset."""
    return moment.astimezone(UTC).isoformat()


def parse_iso(text: str) -> datetime:
    """Parse an ISO-8601 time; a time without an offset is taken as UTC. Raises ValueError, also for a time
    whose UTC equivalent falls outside years 1..9999 (e.g. 0001-01-01T00:00:00+01:00)."""
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise TimeOutOfRange("in UTC it falls outside years 1..9999") from None


def epoch_seconds(texts: Iterable[str | None]) -> np.ndarray:
    """Seconds since the epoch for each ISO string; NaN where a time is missing or unreadable.

    The store's own spelling (to_iso: UTC, "+00:00", microseconds or none) is checked and read by numpy, many at
    once, as bytes: at a million memories 0.3 s against 0.5 s checking each text in Python first, and 0.05 s
    against 0.5 s for a column of nulls (most memories have no archive or hold time). Anything else is read one
    at a time."""
    return joined([_epoch_seconds(part) for part in slices(list(texts))], np.float64)


def _epoch_seconds(texts: list) -> np.ndarray:
    values = np.fromiter(texts, dtype=object, count=len(texts))
    seconds = np.full(len(values), np.nan)
    present = np.flatnonzero(values != None)  # noqa: E711 (an elementwise comparison)
    if present.size:
        seconds[present] = _canonical_seconds(values[present])
    return seconds


def _canonical_seconds(values: np.ndarray) -> np.ndarray:
    """epoch_seconds of values none of which is None."""
    chars = _as_bytes(values)
    canonical = np.zeros(len(values), dtype=bool)
    for length in CANONICAL_LENGTHS:
        # This length exactly, ending in the UTC offset, with "T" between date and time.
        spelled = (chars[:, length - 1] != 0) & (chars[:, length] == 0) & (chars[:, 10] == ord("T")) & \
            (chars[:, length - len(UTC_SUFFIX):length] == np.frombuffer(UTC_SUFFIX, np.uint8)).all(axis=1)
        chars[spelled, length - len(UTC_SUFFIX):length] = 0  # numpy reads the date and time before it
        canonical |= spelled
    chars[~canonical] = 0  # numpy reads b"" as NaT
    try:
        moments = chars.view(f"S{CANONICAL_WIDTH}").ravel().astype("datetime64[us]")
    except ValueError:  # a text of that shape numpy cannot read (an impossible date): each one on its own
        return np.fromiter(map(epoch_or_nan, values), dtype=np.float64, count=len(values))
    micros = moments.astype(np.int64)
    # Microseconds held exactly in a float (years 1685-2255), divided once: as timedelta.total_seconds() does.
    seconds = np.where(canonical, micros / 1e6, np.nan)
    for index in np.flatnonzero(~canonical | (np.abs(micros) >= 2**53)).tolist():
        seconds[index] = epoch_or_nan(values[index])
    return seconds


def _as_bytes(values: np.ndarray) -> np.ndarray:
    """The values as rows of CANONICAL_WIDTH bytes (zero-padded); anything but an ASCII text as no bytes."""
    try:
        chars = values.astype(f"S{CANONICAL_WIDTH}")
    except (UnicodeEncodeError, ValueError, TypeError):
        chars = np.array([value if type(value) is str and value.isascii() else "" for value in values],
                         dtype=f"S{CANONICAL_WIDTH}")
    return chars.view(np.uint8).reshape(len(values), CANONICAL_WIDTH)


def iso_texts(epochs: np.ndarray) -> list[str | None]:
    """to_iso of each epoch second (None where NaN), a whole column at once. Such columns repeat their times
    (every memory one run archived shares its time), so each distinct time is spelled once."""
    epochs = np.asarray(epochs, np.float64)
    known = np.isfinite(epochs)
    times, inverse = np.unique(epochs[known], return_inverse=True)
    # numpy spells them (in UTC, to the microsecond) 3x faster than datetime; isoformat leaves out zero micros.
    micros = np.datetime_as_string(np.round(times * 1e6).astype(np.int64).astype("datetime64[us]"), unit="us")
    spelled = np.array([f"{t[:-7] if t.endswith('.000000') else t}+00:00" for t in micros.tolist()] + [None],
                       dtype=object)
    shown = np.full(epochs.size, len(times))  # the None at the end
    shown[known] = inverse
    return spelled[shown].tolist()


def epoch_or_nan(text: str | None) -> float:
    """Seconds since the epoch of one ISO string; NaN if it is missing, unreadable or not a text."""
    if not text or not isinstance(text, str):
        return np.nan
    try:
        return parse_iso(text).timestamp()
    except (TypeError, ValueError):
        return np.nan


def days_between(earlier_epoch: np.ndarray, now: datetime) -> np.ndarray:
    """Whole-and-fractional days from each epoch time to `now`; never negative."""
    return np.maximum(0.0, (now.timestamp() - earlier_epoch) / SECONDS_PER_DAY)
