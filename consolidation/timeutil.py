"""UTC time helpers: ISO-8601 strings in the stores, aware datetimes and day counts in the code."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import numpy as np

SECONDS_PER_DAY = 86400.0


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

    The store's own spelling (to_iso: UTC, "+00:00", microseconds or none) is read by numpy, a whole column at
    once (at a million memories, 0.31 against 0.48 s one at a time); anything else one at a time."""
    texts = list(texts)
    canonical = [text[:-6] if isinstance(text, str) and len(text) in (25, 32) and text[10] == "T"
                 and text.endswith("+00:00") else None for text in texts]
    try:
        moments = np.array(canonical, dtype="datetime64[us]")  # None: NaT
    except ValueError:  # a text of that shape numpy cannot read (an impossible date): each one on its own
        return np.fromiter(map(epoch_or_nan, texts), dtype=np.float64, count=len(texts))
    micros = moments.astype(np.int64)
    # Microseconds held exactly in a float (years 1685-2255), divided once: as timedelta.total_seconds() does.
    seconds = micros / 1e6
    for index in np.flatnonzero(np.isnat(moments) | (np.abs(micros) >= 2**53)).tolist():
        seconds[index] = epoch_or_nan(texts[index])
    return seconds


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
    """Seconds since the epoch of one ISO string; NaN if it is missing or unreadable."""
    if not text:
        return np.nan
    try:
        return parse_iso(text).timestamp()
    except (TypeError, ValueError):
        return np.nan


def days_between(earlier_epoch: np.ndarray, now: datetime) -> np.ndarray:
    """Whole-and-fractional days from each epoch time to `now`; never negative."""
    return np.maximum(0.0, (now.timestamp() - earlier_epoch) / SECONDS_PER_DAY)
