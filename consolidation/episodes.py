"""Episodes: memories of one scope stated within a short time of each other, and each one's closest partner there."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# The most memories compared as one episode: a bulk import's single moment is cut into blocks of this many, so
# the cost stays linear in the store's size (each memory meets at most BLOCK - 1 others).
BLOCK = 64
BATCH = 512  # episodes multiplied at once (512 x 64 x 384 float32: 50 MB)


@dataclass(frozen=True)
class EpisodeLinks:
    """Pairs of rows (first < second), each the closest partner of at least one of them, with their cosine."""

    first: np.ndarray
    second: np.ndarray
    similarity: np.ndarray


@dataclass(frozen=True)
class Episodes:
    """Episodes as ranges (start, stop) of `order`, the rows of the memories with a time in order of scope and
    time. A row of `order` may be -1: a memory that takes part in no comparison (it has no vector)."""

    order: np.ndarray
    blocks: list[tuple[int, int]]

    def touching(self, marked: np.ndarray) -> Episodes:
        """Only the episodes with a member `marked` (a mask over rows): the only ones whose links can name one."""
        hit = np.r_[0, np.cumsum(marked[self.order])]
        return Episodes(self.order, [(start, stop) for start, stop in self.blocks if hit[stop] > hit[start]])

    def members(self) -> np.ndarray:
        """The rows of every member of an episode, ascending."""
        if not self.blocks:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate([self.order[start:stop] for start, stop in self.blocks]))

    def parts(self, most_members: int) -> list[Episodes]:
        """These episodes in consecutive parts of at most `most_members` members each (one episode more, when a
        single one is larger): each part's vectors can be read on their own."""
        parts, taken, start = [], 0, 0
        for k, (low, high) in enumerate(self.blocks):
            if taken and taken + high - low > most_members:
                parts.append(Episodes(self.order, self.blocks[start:k]))
                taken, start = 0, k
            taken += high - low
        if taken:
            parts.append(Episodes(self.order, self.blocks[start:]))
        return parts

    def renumbered(self, number: np.ndarray) -> Episodes:
        """The same episodes with each row given a new number (`number[row]`; -1: no vector)."""
        return Episodes(number[self.order], self.blocks)


def episodes_of(scope_keys: Sequence[str], seconds: np.ndarray, span_seconds: float) -> Episodes:
    """An episode: memories of one scope stated within `span_seconds` of its first one (in time order, at most
    BLOCK of them). A memory without a time is in none."""
    return Episodes(*_episodes(scope_keys, seconds, span_seconds))


def episode_links(scope_keys: Sequence[str], seconds: np.ndarray, unit: np.ndarray, span_seconds: float,
                  min_similarity: float) -> EpisodeLinks:
    """For each memory (rows of `unit`, unit vectors), its most similar partner among the memories of its
    episode (episodes_of), kept when the cosine is at least `min_similarity`."""
    return closest_partners(episodes_of(scope_keys, seconds, span_seconds), unit, min_similarity)


def closest_partners(episodes: Episodes, unit: np.ndarray, min_similarity: float) -> EpisodeLinks:
    """Each episode member's most similar partner there (rows of `unit`, as `episodes.order` numbers them), kept
    when the cosine is at least `min_similarity`."""
    unit = np.asarray(unit, dtype=np.float32)
    order = episodes.order
    # A batch of episodes of about one size pads little.
    blocks = sorted(episodes.blocks, key=lambda block: block[1] - block[0]) if unit.shape[0] else []
    firsts, partners, values = [], [], []
    for at in range(0, len(blocks), BATCH):
        rows, best, value = _closest(unit, order, blocks[at:at + BATCH])
        kept = (value >= min_similarity) & (rows >= 0)
        ends = np.sort(np.stack([rows[kept], best[kept]]), axis=0)
        firsts.append(ends[0])
        partners.append(ends[1])
        values.append(value[kept])
    if not firsts:
        empty = np.zeros(0, dtype=np.int64)
        return EpisodeLinks(empty, empty, np.zeros(0))
    pairs, where = np.unique(np.stack([np.concatenate(firsts), np.concatenate(partners)]), axis=1,
                             return_index=True)
    return EpisodeLinks(pairs[0].astype(np.int64), pairs[1].astype(np.int64),
                        np.concatenate(values)[where].astype(np.float64))


def _closest(unit: np.ndarray, order: np.ndarray, blocks: list[tuple[int, int]]
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the episodes (ranges of `order`), padded to the longest and multiplied as one batch: each member's row,
    its closest partner's row and their cosine (rows -1 and cosine -inf for padding)."""
    width = max(stop - start for start, stop in blocks)
    slots = np.arange(width)
    members = np.array([start for start, _ in blocks])[:, None] + slots
    members = np.where(slots < np.array([stop - start for start, stop in blocks])[:, None], members, -1)
    rows = np.where(members >= 0, order[np.maximum(members, 0)], -1)
    vectors = unit[np.maximum(rows, 0)]  # padding takes row 0's vector: its cosines are masked below
    similarity = vectors @ vectors.transpose(0, 2, 1)
    absent = (rows < 0)[:, None, :] | np.eye(width, dtype=bool)[None]
    similarity[absent] = -np.inf
    best = similarity.argmax(axis=2)
    value = np.take_along_axis(similarity, best[..., None], axis=2)[..., 0]
    partner = np.take_along_axis(rows, best, axis=1)
    return rows.ravel(), partner.ravel(), value.ravel()


def _episodes(scope_keys: Sequence[str], seconds: np.ndarray, span_seconds: float
              ) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The memories with a time, in order of scope and time, and each episode of two or more of them as a
    (start, stop) range of that order."""
    known = np.flatnonzero(~np.isnan(seconds))
    if known.size < 2:
        return known, []
    _, scope_codes = np.unique(np.asarray(scope_keys, dtype=object)[known].astype(str), return_inverse=True)
    sort = np.lexsort((seconds[known], scope_codes))
    order, codes = known[sort], scope_codes[sort]
    times = seconds[order]
    blocks = []
    group_starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    for start, end in zip(group_starts.tolist(), np.r_[group_starts[1:], order.size].tolist()):
        # Where the episode opened by each memory ends; a memory alone in its span opens none, and is skipped.
        reach = np.searchsorted(times[start:end], times[start:end] + span_seconds, side="right") + start
        opens = np.flatnonzero(reach - np.arange(start, end) >= 2) + start
        at = start
        while (next_open := int(np.searchsorted(opens, at))) < opens.size:
            at = int(opens[next_open])
            stop = min(int(reach[at - start]), at + BLOCK)
            blocks.append((at, stop))
            at = stop
    return order, blocks
