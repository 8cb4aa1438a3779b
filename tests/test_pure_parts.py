"""The pure pieces: the built-in embedder, the similarity graph, cluster identity, summaries, the schedule."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from consolidation.clusters import match_clusters
from consolidation.embedding import HashingEmbedder
from consolidation.cadence import due_tasks, next_due
from consolidation.similarity import clusters, normalized, similar_pairs_exact
from consolidation.slices import SLICE, columns_of, joined, joined_columns, slices
from consolidation.stores.graph import MetaPatternRecord
from consolidation.timeutil import epoch_or_nan, epoch_seconds
from consolidation.summaries import ClusterMember, HeuristicSummarizer, key_terms
from tests.conftest import NOW


def test_the_embedder_is_deterministic_and_puts_similar_texts_close():
    embedder = HashingEmbedder(384)
    texts = ["User prefers dark mode in the code editor", "The user likes dark mode in their code editor",
             "Quarterly revenue grew by twelve percent"]
    first, second = embedder.embed(texts), HashingEmbedder(384).embed(texts)
    assert np.array_equal(first, second)
    assert np.linalg.norm(first, axis=1) == pytest.approx([1, 1, 1], abs=1e-6)
    assert float(first[0] @ first[1]) > 0.7 and abs(float(first[0] @ first[2])) < 0.2


def test_an_empty_text_still_gets_a_unit_vector():
    assert np.linalg.norm(HashingEmbedder(16).embed(["", "the of and"]), axis=1) == pytest.approx([1, 1])


def test_exact_pairs_match_a_brute_force_count():
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((4, 32))
    vectors = normalized(np.repeat(centers, 50, axis=0) + 0.35 * rng.standard_normal((200, 32)))
    rows, cols, _ = similar_pairs_exact(vectors, 0.75)
    brute = {(i, j) for i in range(200) for j in range(i + 1, 200) if float(vectors[i] @ vectors[j]) >= 0.75}
    assert set(zip(rows.tolist(), cols.tolist())) == brute and len(brute) > 100


def test_components_keep_only_large_groups_largest_first():
    rows, cols = np.array([0, 1, 2, 3, 5, 6, 7, 8, 9]), np.array([1, 2, 3, 4, 6, 7, 8, 9, 10])
    found = clusters(12, rows, cols, min_size=5)
    assert [sorted(g.tolist()) for g in found] == [[5, 6, 7, 8, 9, 10], [0, 1, 2, 3, 4]]
    assert clusters(12, rows, cols, min_size=7) == []


def pattern(pid, members):
    return MetaPatternRecord(pid, frozenset(members))


def test_cluster_identity_survives_growth_and_shrinking_and_retires_the_rest():
    old = [pattern("P1", "abcdef"), pattern("P2", "uvwxyz"), pattern("P3", "mnopq")]
    new = [frozenset("abcdefghijkl"), frozenset("uvw"), frozenset("rstu")]
    matches, retired = match_clusters(new, old)
    assert [m.pattern_id for m in matches] == ["P1", "P2", None]
    assert retired == ["P3"]


def test_a_merge_keeps_the_larger_pattern_and_a_split_keeps_one_half():
    merged, retired = match_clusters([frozenset("abcdefgh")], [pattern("P1", "abcde"), pattern("P2", "fgh")])
    assert merged[0].pattern_id == "P1" and retired == ["P2"]
    split, retired = match_clusters([frozenset("abcd"), frozenset("efgh")], [pattern("P1", "abcdefgh")])
    assert sorted(m.pattern_id or "" for m in split) == ["", "P1"] and retired == []


def _matched_one_pair_at_a_time(clusters, patterns):
    """The matching rule stated directly: every cluster against every pattern, by counting shared members."""
    candidates = []
    for index, cluster in enumerate(clusters):
        for p in patterns:
            overlap = len(cluster & p.member_ids)
            share = max(overlap / len(cluster), overlap / max(1, len(p.member_ids))) if overlap else 0.0
            if share >= 0.5:
                candidates.append((overlap, share, p.id, index))
    assigned, taken = {}, set()
    for _, _, pattern_id, index in sorted(candidates, reverse=True):
        if index not in assigned and pattern_id not in taken:
            assigned[index] = pattern_id
            taken.add(pattern_id)
    return [assigned.get(i) for i in range(len(clusters))], sorted({p.id for p in patterns} - taken)


@hyp_settings(max_examples=150, deadline=None)
@given(st.lists(st.sets(st.sampled_from("abcdefghijklmnop"), min_size=1, max_size=9), max_size=6),
       st.lists(st.sets(st.sampled_from("abcdefghijklmnopqrst"), max_size=9), max_size=6))
def test_cluster_matching_agrees_with_counting_each_pair(cluster_sets, pattern_sets):
    """Overlapping clusters, patterns sharing members or holding none, members no cluster has: the counted
    overlaps give the matches the rule gives one pair at a time."""
    clusters = [frozenset(c) for c in cluster_sets]
    patterns = [pattern(f"P{k}", members) for k, members in enumerate(pattern_sets)]
    matches, retired = match_clusters(clusters, patterns)
    expected, expected_retired = _matched_one_pair_at_a_time(clusters, patterns)
    assert [m.pattern_id for m in matches] == expected and retired == expected_retired
    assert all(m.members == c for m, c in zip(matches, clusters))


def test_the_heuristic_summary_reads_like_a_summary():
    members = [
        ClusterMember("1", "Decided to use PostgreSQL for billing. It scales.", "Decision", "2026-01-03", 0.99),
        ClusterMember("2", "PostgreSQL chosen for the billing database", "Decision", "2026-02-10", 0.97),
        ClusterMember("3", "Billing needs PostgreSQL replicas", "Insight", "2026-03-18", 0.90),
    ]
    text = HeuristicSummarizer().summarize(members).text
    assert text.startswith("3 related memories (Decision ×2, Insight ×1) from 2026-01-03 to 2026-03-18")
    assert "about billing, PostgreSQL." in text  # shared by all three, alphabetical, as usually spelled
    assert "“Decided to use PostgreSQL for billing.” / “PostgreSQL chosen for the billing database”" in text


def test_key_terms_need_two_texts():
    assert key_terms(["alpha beta", "beta gamma", "gamma beta"]) == ["beta", "gamma"]


def test_next_due_from_last_run_and_backoff():
    control = {"last_decay": NOW.isoformat()}
    assert next_due("decay", control, 3600, 60) == NOW + timedelta(hours=1)
    assert next_due("forget", control, 0, 60) is None
    failing = {**control, "failures_decay": 3, "last_failure_decay": (NOW + timedelta(hours=2)).isoformat()}
    assert next_due("decay", failing, 3600, 60) == NOW + timedelta(hours=2, seconds=240)
    intervals = {"decay": 1, "dedup": 2, "creative": 0, "cluster": 5, "forget": 1}
    assert due_tasks({}, intervals, NOW, 60) == ["decay", "dedup", "cluster", "forget"]


def planted_vectors(n, dim=64, topic_size=40, seed=5):
    rng = np.random.default_rng(seed)
    topics = n // topic_size
    centers = rng.standard_normal((topics, dim))
    labels = np.repeat(np.arange(topics), topic_size)
    spread = rng.uniform(0.3, 0.8, n)[:, None]
    return normalized(centers[labels] + spread * rng.standard_normal((n, dim)) / np.sqrt(dim))


def test_cells_find_what_exact_finds_on_planted_topics():
    from consolidation.similarity import similar_pairs, similar_pairs_by_cells

    vectors = planted_vectors(4000)
    exact = set(zip(*(a.tolist() for a in similar_pairs_exact(vectors, 0.75)[:2])))
    rows, cols, _ = similar_pairs_by_cells(vectors, 0.75, probe_cells=8)
    found = list(zip(rows.tolist(), cols.tolist()))
    assert all(a < b for a, b in found) and len(found) == len(set(found))  # i < j, each pair once
    assert set(found) <= exact  # every pair is checked exactly: no false positives
    assert len(set(found)) / len(exact) >= 0.98 and len(exact) > 10000
    small_rows, _, _ = similar_pairs(vectors, 0.75, exact_limit=5000, probe_cells=8)
    assert len(small_rows) == len(exact)  # under the limit: the exact path


def test_two_level_cells_find_what_exact_finds(monkeypatch):
    """The two-level cells a million vectors use (coarse cells split into fine ones), tried small: 8,000
    vectors in 160 cells under 12 coarse ones, each vector searching the cells of its 4 nearest coarse cells."""
    from consolidation import similarity

    monkeypatch.setattr(similarity, "POINTS_PER_CELL", 50)
    monkeypatch.setattr(similarity, "MIN_COARSE_CELLS", 4)
    monkeypatch.setattr(similarity, "COARSE_PROBES", 4)
    vectors = planted_vectors(8000)
    centroids, nearest = similarity._cells(vectors, 160, seed=0)
    assert 140 <= centroids.shape[0] <= 180  # each coarse cell split by its size: about the cells asked for
    assert nearest.shape == (8000, 1 + similarity.POINT_PROBES) and nearest.min() >= 0
    truly_nearest = np.argmax(vectors @ centroids.T, axis=1)
    assert np.mean(nearest[:, 0] == truly_nearest) >= 0.9  # searching a few coarse cells mostly finds the nearest
    exact = set(zip(*(a.tolist() for a in similar_pairs_exact(vectors, 0.75)[:2])))
    rows, cols, _ = similarity.similar_pairs_by_cells(vectors, 0.75, probe_cells=2)
    found = set(zip(rows.tolist(), cols.tolist()))
    assert found <= exact and len(found) == rows.size
    assert len(found) / len(exact) >= 0.98 and len(exact) > 20000


_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_params = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) |
                       st.dictionaries(st.text(min_size=1).filter(lambda k: "`" not in k), inner, max_size=4),
                       max_leaves=20)


@hyp_settings(max_examples=300, derandomize=True)
@given(_params)
def test_query_parameters_are_written_as_the_falkordb_client_writes_them(value):
    """Our parameter writer is a faster copy of the client's: byte for byte the same text, quotes, backslashes,
    newlines and map keys included."""
    from falkordb.helpers import stringify_param_value

    from consolidation.stores.falkor import cypher_literal

    assert cypher_literal(value) == stringify_param_value(value)
    assert cypher_literal([value, {"row": value}]) == stringify_param_value([value, {"row": value}])


@pytest.mark.parametrize("key", ["", "a`b"])
def test_a_map_key_the_client_refuses_is_refused_the_same_way(key):
    from consolidation.stores.falkor import cypher_literal

    with pytest.raises(ValueError, match="Cypher map key"):
        cypher_literal({key: 1})


def test_a_union_adds_the_others_pairs_once_and_a_sample_is_the_lowest_pairs_in_order(monkeypatch):
    import consolidation.similarity as similarity
    from consolidation.similarity import INDEX, Pairs

    monkeypatch.setattr(similarity, "UNION_CHUNK", 3)  # several chunks, so a pair in any chunk is found
    n = 10
    graph = Pairs(np.array([5, 0, 2, 7, 1], INDEX), np.array([9, 4, 3, 8, 6], INDEX),
                  np.array([0.9, 0.8, 0.85, 0.95, 0.76], np.float32))
    same_facts = Pairs(np.array([2, 1, 0, 1], INDEX), np.array([3, 2, 1, 2], INDEX),
                       np.array([0.85, 0.8, 0.99, 0.8], np.float32))
    union = graph.union(same_facts, n)
    # By hand: (2, 3) is the graph's already, (1, 2) comes twice; (0, 1) and (1, 2) are new.
    assert list(zip(union.rows.tolist(), union.cols.tolist())) == \
        [(5, 9), (0, 4), (2, 3), (7, 8), (1, 6), (0, 1), (1, 2)]
    assert graph.union(Pairs.empty(), n) is graph
    sample = union.first(3, n)
    assert list(zip(sample.rows.tolist(), sample.cols.tolist())) == [(0, 1), (0, 4), (1, 2)]
    assert sample.similarities.tolist() == pytest.approx([0.99, 0.8, 0.8])
    assert union.first(50, n).rows.size == 7


@pytest.mark.parametrize("seed", range(5))
def test_a_sample_is_the_lowest_pairs_whatever_their_order_and_however_many_share_a_row(seed):
    """Pairs.first looks only at the rows up to the count-th lowest: the same pairs as ordering every (i, j)."""
    from consolidation.similarity import INDEX, Pairs

    rng = np.random.default_rng(seed)
    n = 40
    keys = rng.choice(n * n, size=300, replace=False)
    keys = keys[keys // n < keys % n]  # i < j, each pair once, in no order
    pairs = Pairs((keys // n).astype(INDEX), (keys % n).astype(INDEX), rng.random(keys.size).astype(np.float32))
    by_key = dict(zip(keys.tolist(), pairs.similarities.tolist()))
    for count in (0, 1, 2, 7, 30, keys.size, keys.size + 5):
        sample = pairs.first(count, n)
        lowest = sorted(keys.tolist())[:count]
        assert (sample.rows.astype(np.int64) * n + sample.cols).tolist() == lowest
        assert sample.similarities.tolist() == [by_key[k] for k in lowest]


def test_simultaneous_blocks_cover_each_change_s_minute_and_no_more_than_they_must():
    """Changes far apart in time (a crossing here and there) each get a narrow span; an import's changes, all in
    one minute, share blocks of SIMULTANEOUS_BLOCK; every change's own window lies inside its block's range."""
    from consolidation.hygiene.changes import ORDER_TOLERANCE_SECONDS
    from consolidation.tasks import dedup_incremental as di

    rng = np.random.default_rng(3)
    times = np.sort(rng.uniform(0, 30 * 86400, 200_000))  # a month, about one memory every 13 s
    imported = times.size - 1 - np.arange(2000)  # the last 2,000 written in one minute
    times[imported] = times[-1]
    scattered = rng.choice(times.size - 2000, 300, replace=False)
    timed = np.concatenate([np.sort(scattered), np.sort(imported)])
    blocks = list(di._blocks(timed, times, times))
    assert np.array_equal(np.concatenate([b for b, _, _ in blocks]), timed)
    for block, low, high in blocks:
        lows = np.searchsorted(times, times[block] - ORDER_TOLERANCE_SECONDS, side="left")
        highs = np.searchsorted(times, times[block] + ORDER_TOLERANCE_SECONDS, side="right")
        assert low <= lows.min() and highs.max() <= high and block.size <= di.SIMULTANEOUS_BLOCK
        assert high - low <= di.SIMULTANEOUS_SPAN or block.size == 1
    compared = sum(block.size * (high - low) for block, low, high in blocks)
    assert compared < 2000 * 2000 + 300 * 300  # the import against its minute, each scattered change its own


def test_due_times_kept_between_passes():
    from consolidation.revisits import USE_MARGIN, Dues

    start = NOW
    at = start.timestamp()
    dues = Dues.kept(np.array([1, 2, 3, 4]), np.array([at + 10, np.inf, at + 100, at + 5]), 7, start)
    assert dues.node_ids.tolist() == [1, 3, 4]  # never due: not kept
    assert sorted(dues.due_by(start + timedelta(seconds=10)).tolist()) == [1, 4]
    assert dues.used_since() == start - USE_MARGIN
    # A pass read 1 (still there, due later), 4 (gone) and 9 (new); 3 was not read and keeps its time.
    later = start + timedelta(minutes=5)
    after = dues.updated(np.array([1, 4, 9]), np.array([1, 9]), np.array([at + 500, at + 50]), 12, later)
    assert dict(zip(after.node_ids.tolist(), after.due.tolist())) == {3: at + 100, 1: at + 500, 9: at + 50}
    assert (after.change, after.taken_at) == (12, later)


@hyp_settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)).map(
        lambda moment: moment.replace(tzinfo=UTC).isoformat()),
    st.datetimes(timezones=st.timezones()).map(lambda moment: moment.isoformat()),
    st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{6})?\+00:00\Z"),
    st.none(), st.just(""), st.text(max_size=40), st.integers(), st.lists(st.text(max_size=3), max_size=2)),
    max_size=12))
def test_a_column_of_times_reads_as_each_time_does_on_its_own(texts):
    """The store's spelling (read by numpy), other offsets, impossible dates of that shape, text that is no
    time at all, values that are not texts, nothing: every value is what reading that one alone gives."""
    expected = np.array([epoch_or_nan(text) for text in texts], dtype=np.float64)
    assert np.array_equal(epoch_seconds(texts), expected, equal_nan=True)


def test_rows_become_columns_and_slices_join_whole():
    """columns_of and slices / joined give what one call over everything gives, across slice boundaries."""
    rows = [(index, f"id-{index}", index % 3 == 0) for index in range(1, 11)]
    assert columns_of(rows, size=3) == [list(range(1, 11)), [f"id-{i}" for i in range(1, 11)],
                                        [i % 3 == 0 for i in range(1, 11)]]
    assert columns_of([]) == []
    parts = [np.array(part, dtype=np.int64) * 2 for part in slices(list(range(10)), size=4)]
    assert [len(part) for part in parts] == [4, 4, 2]
    assert joined(parts, np.int64).tolist() == [2 * i for i in range(10)]
    assert joined([], np.float64).dtype == np.float64 and joined([], np.float64).size == 0
    # Pages of columns (an empty page among them, as a scan's page with no memory left gives) join into the
    # columns of all their rows, in page order.
    pages = [columns_of(rows[:4]), columns_of([]), columns_of(rows[4:7]), columns_of(rows[7:])]
    assert joined_columns(pages) == columns_of(rows)
    assert joined_columns([columns_of([])]) == [] and joined_columns([]) == []
    # Typed a page at a time (a scan's kinds: arrays for some columns, lists kept for others), the pages join
    # into what typing all the rows at once gives.
    from consolidation.stores.falkor import typed

    kinds = ("integers", "as read", "flags")
    typed_pages = [typed(columns_of(part), kinds) for part in (rows[:4], [], rows[4:7], rows[7:])]
    assert typed_pages[1] == []
    whole = joined_columns(typed_pages)
    assert whole[0].dtype == np.int64 and whole[0].tolist() == list(range(1, 11))
    assert whole[1] == [f"id-{i}" for i in range(1, 11)]
    assert whole[2].dtype == bool and whole[2].tolist() == [i % 3 == 0 for i in range(1, 11)]


def test_a_column_longer_than_a_slice_reads_as_each_time_on_its_own():
    """Times read a slice at a time (SLICE) read as each one alone, on both sides of a slice's edge."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    moments = [start + timedelta(seconds=17 * i, microseconds=i % 7) for i in range(SLICE + 500)]
    texts = [None if i % 5 == 0 else moment.isoformat() for i, moment in enumerate(moments)]
    expected = np.array([np.nan if text is None else moment.timestamp() for text, moment in zip(texts, moments)])
    assert np.array_equal(epoch_seconds(texts), expected, equal_nan=True)


@pytest.mark.parametrize("numbers, refused", [
    ([0.25] * 383 + [1e999], "holds a number too large to store"),  # 1e999 parses as infinity
    ([-1e999] + [0.25] * 383, "holds a number too large to store"),
    ([1, 2, 2**63], "holds an integer beyond the 64-bit range"),
    ([-(2**63) - 1, 5], "holds an integer beyond the 64-bit range"),
    ([0.5, 2**63], "holds an integer beyond the 64-bit range"),  # mixed: checked one by one
    ([0.5, True, "x\x00"], "contains a NUL character"),
])
def test_a_list_of_numbers_checked_at_once_refuses_what_one_by_one_refuses(numbers, refused):
    from consolidation.errors import InvalidInput
    from consolidation.json_input import check_value, parse_json

    with pytest.raises(InvalidInput, match=refused) as caught:
        check_value({"embedding": numbers, "content": "x"})
    assert caught.value.field == "embedding"
    assert parse_json(b'{"embedding": [0.5, -1, 3e38, 2.5e-300]}') == {"embedding": [0.5, -1, 3e38, 2.5e-300]}


def test_numbers_nested_past_the_depth_limit_are_refused_even_when_plain():
    from consolidation.errors import InvalidInput
    from consolidation.json_input import MAX_DEPTH, check_value

    check_value({"v": _nested([0.5, 1.5], MAX_DEPTH - 2)})  # its numbers at the deepest level allowed
    with pytest.raises(InvalidInput, match="nested too deeply"):
        check_value({"v": _nested([0.5, 1.5], MAX_DEPTH - 1)})


def _nested(value, levels):
    for _ in range(levels):
        value = [value]
    return value
