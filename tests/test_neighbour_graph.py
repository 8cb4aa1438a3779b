"""The similarity graph kept between runs: what changed is searched again, and the result is what a new search
would find (exactly below the exact limit; every pair touching a changed vector above it, in planted data)."""

import numpy as np
import pytest

import consolidation.neighbours as neighbours
from consolidation.neighbours import NeighbourGraph
from consolidation.similarity import normalized, similar_pairs_exact
from tests.conftest import make_settings
from tests.test_pure_parts import planted_vectors

THRESHOLD = 0.75


def no_progress(done, total):
    return None


def pair_set(pairs, ids=None):
    found = list(zip(pairs.rows.tolist(), pairs.cols.tolist()))
    assert all(a < b for a, b in found) and len(found) == len(set(found))  # i < j, each pair once
    return set(found) if ids is None else {(ids[a], ids[b]) for a, b in found}


def exact_set(unit, ids):
    rows, cols, _ = similar_pairs_exact(unit, THRESHOLD)
    return {(ids[a], ids[b]) for a, b in zip(rows.tolist(), cols.tolist())}


def moved(unit, rows, rng, scale=0.3):
    """The vectors, with `rows` moved a little (the memory's text was rewritten and embedded again)."""
    changed = unit.copy()
    changed[rows] = normalized(unit[rows] + scale * rng.standard_normal((len(rows), unit.shape[1])) /
                               np.sqrt(unit.shape[1]))
    return changed


@pytest.fixture
def builds(monkeypatch):
    """How many times the graph was built whole."""
    count = []
    real = neighbours.similar_pairs_within
    monkeypatch.setattr(neighbours, "similar_pairs_within", lambda *a, **k: count.append(1) or real(*a, **k))
    real_cells = neighbours.similar_pairs_and_cells
    monkeypatch.setattr(neighbours, "similar_pairs_and_cells", lambda *a, **k: count.append(1) or real_cells(*a, **k))
    return count


def test_below_the_exact_limit_an_update_finds_exactly_what_a_new_search_finds(tmp_path, builds):
    rng = np.random.default_rng(1)
    unit = planted_vectors(1200)
    ids = [f"m{i}" for i in range(1200)]
    graph = NeighbourGraph(make_settings(tmp_path))
    assert pair_set(graph.pairs(ids, unit, THRESHOLD, no_progress), ids) == exact_set(unit, ids)
    # 30 rewritten, 20 gone, 25 new (restatements of others): 75 of 1,205, under the rebuild share.
    later = moved(unit, rng.choice(1200, 30, replace=False), rng)
    new = normalized(unit[:25] + 0.2 * rng.standard_normal((25, unit.shape[1])) / 8)
    later_unit = np.concatenate([later[20:], new])
    later_ids = ids[20:] + [f"new{i}" for i in range(25)]
    found = pair_set(graph.pairs(later_ids, later_unit, THRESHOLD, no_progress), later_ids)
    assert found == exact_set(later_unit, later_ids) and len(builds) == 1
    assert any("new0" in pair for pair in found)  # the new restatement found its original's neighbours


def test_above_the_exact_limit_a_changed_vector_finds_its_neighbours_in_the_kept_cells(tmp_path, builds):
    rng = np.random.default_rng(2)
    unit = planted_vectors(6000)
    ids = [f"m{i}" for i in range(6000)]
    graph = NeighbourGraph(make_settings(tmp_path, consolidation_cluster_exact_limit=1000))
    before = pair_set(graph.pairs(ids, unit, THRESHOLD, no_progress), ids)
    changed = rng.choice(6000, 120, replace=False)
    later = moved(unit, changed, rng)
    found = pair_set(graph.pairs(ids, later, THRESHOLD, no_progress), ids)
    assert len(builds) == 1
    truth = exact_set(later, ids)
    assert found <= truth  # every pair is checked exactly
    touched = {ids[i] for i in changed.tolist()}
    touching = {pair for pair in truth if touched & set(pair)}
    assert len(touching) > 500 and len(found & touching) / len(touching) >= 0.98
    untouched = {pair for pair in before if not touched & set(pair)}
    assert {pair for pair in found if not touched & set(pair)} == untouched  # the rest kept as they were


def test_nothing_changed_reads_the_kept_pairs_and_a_subset_or_higher_threshold_filters_them(tmp_path, builds):
    unit = planted_vectors(800)
    ids = [f"m{i}" for i in range(800)]
    graph = NeighbourGraph(make_settings(tmp_path))
    graph.pairs(ids, unit, THRESHOLD, no_progress)
    some = list(range(0, 800, 2))
    subset = pair_set(graph.pairs([ids[i] for i in some], unit[some], 0.85, no_progress), [ids[i] for i in some])
    exact = {(ids[some[a]], ids[some[b]]) for a, b in zip(*(x.tolist() for x in similar_pairs_exact(unit[some], 0.85)[:2]))}
    assert subset == exact and len(builds) == 1
    graph.pairs(ids, unit, 0.5, no_progress)  # lower than it was built at: built again
    assert len(builds) == 2


def test_a_memory_moved_to_another_scope_loses_its_pairs_with_the_old_one(tmp_path, builds):
    unit = planted_vectors(400)
    ids = [f"m{i}" for i in range(400)]
    scopes = ["alice"] * 400
    graph = NeighbourGraph(make_settings(tmp_path))
    first = pair_set(graph.pairs(ids, unit, THRESHOLD, no_progress, scopes), ids)
    partner = next(b for a, b in first if a == "m0")
    scopes[0] = "bob"  # the same vector, now another user's memory
    found = pair_set(graph.pairs(ids, unit, THRESHOLD, no_progress, scopes), ids)
    assert not any("m0" in pair for pair in found) and ("m0", partner) in first
    assert found == {pair for pair in first if "m0" not in pair} and len(builds) == 1


def test_past_the_rebuild_share_the_graph_is_built_again(tmp_path, builds):
    rng = np.random.default_rng(4)
    unit = planted_vectors(1000)
    ids = [f"m{i}" for i in range(1000)]
    graph = NeighbourGraph(make_settings(tmp_path))
    graph.pairs(ids, unit, THRESHOLD, no_progress)
    share = int(neighbours.REBUILD_SHARE * 1000)
    unit = moved(unit, np.arange(share), rng)  # exactly the share: searched again
    graph.pairs(ids, unit, THRESHOLD, no_progress)
    assert len(builds) == 1
    unit = moved(unit, np.arange(share, share + 1), rng)  # one more since the build: past it
    found = pair_set(graph.pairs(ids, unit, THRESHOLD, no_progress), ids)
    assert len(builds) == 2 and found == exact_set(unit, ids)


def test_fingerprints_tell_a_changed_vector_or_scope_and_nothing_else():
    unit = planted_vectors(320)
    prints = neighbours.fingerprints(unit, None)
    assert np.array_equal(prints, neighbours.fingerprints(unit.copy(), None))
    changed = unit.copy()
    changed[7, 3] = np.nextafter(changed[7, 3], 2)  # the smallest change a float32 can make
    assert np.flatnonzero(neighbours.fingerprints(changed, None) != prints).tolist() == [7]
    scoped = neighbours.fingerprints(unit, ["a"] * 160 + ["b"] * 160)
    assert (scoped != prints).all()
    assert np.flatnonzero(neighbours.fingerprints(unit, ["a"] * 159 + ["b"] * 161) != scoped).tolist() == [159]


def test_memories_split_into_scopes_are_searched_scope_by_scope(tmp_path, builds):
    unit = planted_vectors(3000)
    ids = [f"m{i}" for i in range(3000)]
    graph = NeighbourGraph(make_settings(tmp_path, consolidation_cluster_exact_limit=1000))
    graph.pairs(ids, unit, THRESHOLD, no_progress, ["alice"] * 3000)  # one scope, above the limit: by cells
    scopes = ["alice"] * 2980 + ["bob"] * 20
    found = pair_set(graph.pairs(ids, unit, THRESHOLD, no_progress, scopes), ids)
    assert len(builds) == 2  # the cells were one scope's: the scopes are searched each on its own
    position = {memory_id: i for i, memory_id in enumerate(ids)}
    assert found and all(scopes[position[a]] == scopes[position[b]] for a, b in found)


def test_a_removed_memory_keeps_the_pairs_it_had_while_its_vector_is_the_one_the_graph_held(tmp_path, builds):
    """A memory that left (archived, merged, deleted) is answered with its pairs from the graph, before the
    graph is updated without it and after (the update keeps them); with another vector it is not answered."""
    rng = np.random.default_rng(4)
    unit = planted_vectors(880)
    ids = [f"m{i}" for i in range(880)]
    graph = NeighbourGraph(make_settings(tmp_path))
    graph.pairs(ids, unit, THRESHOLD, no_progress)
    truth = exact_set(unit, ids)
    leaving = [3, 10, 400]
    expected = {ids[k]: {b if a == ids[k] else a for a, b in truth if ids[k] in (a, b)} for k in leaving}
    assert all(expected.values())  # each had neighbours

    def former(threshold=THRESHOLD, vectors=unit[leaving]):
        found = graph.former_pairs([ids[k] for k in leaving], vectors, None, threshold)
        return {memory_id: set(others) for memory_id, (others, _) in found.items()}

    assert former() == expected  # still in the graph
    stay = [i for i in range(880) if i not in leaving]
    later = moved(unit, [5, 6], rng)  # two others rewritten: the graph is updated, and lets the three go
    graph.pairs([ids[i] for i in stay], later[stay], THRESHOLD, no_progress)
    assert former() == expected and len(builds) == 1
    cosine = {(ids[k], other): float(unit[k] @ unit[ids.index(other)]) for k in leaving for other in expected[ids[k]]}
    values = np.sort(list(cosine.values()))
    gaps = np.flatnonzero(np.diff(values) > 1e-4)  # a higher threshold keeps the pairs above it, halfway in a gap
    middle = gaps[np.argmin(np.abs(gaps - values.size // 2))]
    strict = float(values[middle] + values[middle + 1]) / 2
    assert former(strict) == {m: {o for o in others if cosine[m, o] >= strict} for m, others in expected.items()}
    assert sum(map(len, former(strict).values())) < sum(map(len, expected.values()))
    assert graph.former_pairs([ids[3]], moved(unit, [3], rng)[[3]], None, THRESHOLD) == {}  # another vector


def test_memories_that_only_left_are_let_go_and_the_rest_keep_their_pairs(tmp_path, builds):
    """Above the exact limit (cells): asked for the memories minus some that left, the graph gives the pairs it
    had among the rest, with no search and no new build, and answers for the ones that left."""
    unit = planted_vectors(6000)
    ids = [f"m{i}" for i in range(6000)]
    graph = NeighbourGraph(make_settings(tmp_path, consolidation_cluster_exact_limit=1000))
    before = pair_set(graph.pairs(ids, unit, THRESHOLD, no_progress), ids)
    stay = [i for i in range(6000) if i % 50 != 7]
    left = [ids[i] for i in range(6000) if i % 50 == 7]
    after = pair_set(graph.pairs([ids[i] for i in stay], unit[stay], THRESHOLD, no_progress), [ids[i] for i in stay])
    assert after == {pair for pair in before if not set(pair) & set(left)} and len(builds) == 1
    former = graph.former_pairs(left, unit[[i for i in range(6000) if i % 50 == 7]], None, THRESHOLD)
    assert set(former) == set(left)
    assert {(a, b) for a, (others, _) in former.items() for b in others} == \
        {(a, b) for pair in before for a, b in (pair, pair[::-1]) if a in former}


@pytest.mark.parametrize("count", [0, 5, 37, 64])
def test_renumbering_in_two_halves_keeps_every_mapped_pair_in_order(monkeypatch, count):
    """The kept graph's pairs renumbered (some ends dropped), at a threshold, with more pairs after them: what
    one plain pass over the pairs gives, whether the halves split on a chunk or there is one chunk."""
    monkeypatch.setattr(neighbours, "UNION_CHUNK", 4)
    rng = np.random.default_rng(count)
    rows, cols = rng.integers(0, 30, count), rng.integers(0, 30, count)
    pairs = neighbours.Pairs(np.minimum(rows, cols).astype(np.int32), np.maximum(rows, cols).astype(np.int32),
                             rng.random(count).astype(np.float32))
    renumber = rng.permutation(30).astype(np.int32)
    renumber[rng.choice(30, 6, replace=False)] = -1
    then = neighbours.Pairs(np.array([1, 2], np.int32), np.array([5, 9], np.int32), np.array([0.9, 0.8], np.float32))
    expected = [(min(renumber[a], renumber[b]), max(renumber[a], renumber[b]), s)
                for a, b, s in zip(pairs.rows.tolist(), pairs.cols.tolist(), pairs.similarities.tolist())
                if renumber[a] >= 0 and renumber[b] >= 0 and s >= 0.4] + [(1, 5, then.similarities[0]),
                                                                           (2, 9, then.similarities[1])]
    found = neighbours._renumbered(pairs, renumber, 0.4, then)
    assert list(zip(found.rows.tolist(), found.cols.tolist(), found.similarities.tolist())) == expected
