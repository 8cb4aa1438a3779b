"""The embedded store's in-memory copy of the vectors: views instead of copies, and what a task holds never changes."""

import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from consolidation.similarity import normalized
from consolidation.stores.vector_cache import VectorCache


def _filled(count: int, size: int = 8, seed: int = 0) -> tuple[VectorCache, list[str], np.ndarray]:
    vectors = normalized(np.random.default_rng(seed).standard_normal((count, size)))
    cache = VectorCache(size)
    ids = [f"m{i}" for i in range(count)]
    cache.put(ids, vectors)
    return cache, ids, vectors


def test_every_vector_in_stored_order_is_handed_out_without_a_copy_and_cannot_be_written():
    cache, ids, vectors = _filled(100)
    found, matrix = cache.get(ids)
    assert found == ids and np.array_equal(matrix, vectors)
    assert np.shares_memory(matrix, cache._matrix)
    with pytest.raises(ValueError):
        matrix[0, 0] = 1.0


def test_a_vector_replaced_while_a_view_is_held_leaves_the_view_as_it_was():
    cache, ids, vectors = _filled(100)
    _, held = cache.get(ids)
    replacement = normalized(np.ones((1, 8)))
    cache.put(["m3"], replacement)
    assert np.array_equal(held, vectors)  # the task's view still shows the old vector
    assert np.allclose(cache.get(["m3"])[1], replacement)


def test_a_freed_row_reused_while_a_view_is_held_leaves_the_view_as_it_was():
    cache, ids, vectors = _filled(100)
    _, held = cache.get(ids)
    cache.drop(["m5"])
    cache.put(["new"], normalized(np.ones((1, 8))))
    assert np.array_equal(held, vectors)
    assert cache.get(["m5"])[0] == [] and np.allclose(cache.get(["new"])[1], normalized(np.ones((1, 8))))


def test_with_no_view_alive_a_write_goes_into_the_matrix_in_place():
    cache, ids, _ = _filled(100)
    cache.get(ids)  # a view, dropped at once
    storage = cache._matrix.__array_interface__["data"][0]  # its address: holding the array would share it
    cache.put(["m3"], normalized(np.ones((1, 8))))
    assert cache._matrix.__array_interface__["data"][0] == storage


def test_a_large_request_in_another_order_reorders_the_rows_so_the_next_one_is_a_view():
    cache, ids, vectors = _filled(100)
    order = np.random.default_rng(1).permutation(100)
    asked = [ids[i] for i in order]
    _, first = cache.get(asked)
    _, second = cache.get(asked)
    assert np.array_equal(first, vectors[order]) and np.array_equal(second, vectors[order])
    assert np.shares_memory(second, cache._matrix)
    assert np.array_equal(cache.get(ids)[1], vectors)  # every id still finds its own vector


def test_a_small_request_is_copied_and_leaves_the_order_alone():
    cache, ids, vectors = _filled(100)
    _, matrix = cache.get(ids[::3])
    assert np.array_equal(matrix, vectors[::3]) and not np.shares_memory(matrix, cache._matrix)
    assert np.shares_memory(cache.get(ids)[1], cache._matrix)  # still stored in the original order


def test_most_rows_with_some_left_out_between_them_are_reordered_into_a_slice():
    """Archived memories keep their vectors, so the active ones a task asks for have gaps between them."""
    cache, ids, vectors = _filled(100)
    active = [memory_id for k, memory_id in enumerate(ids) if k % 10 != 3]
    _, first = cache.get(active)
    _, second = cache.get(active)
    kept = [k for k in range(100) if k % 10 != 3]
    assert np.array_equal(first, vectors[kept]) and np.shares_memory(second, cache._matrix)
    assert np.array_equal(cache.get(ids)[1], vectors)


@pytest.mark.parametrize("chunk", [7, 65536])
def test_with_no_view_alive_a_reorder_moves_the_rows_within_the_matrix(monkeypatch, chunk):
    """Rows moving down past others, gaps left by archived ones, and chunk edges between a row and its place."""
    monkeypatch.setattr("consolidation.stores.vector_cache.REORDER_CHUNK", chunk)
    cache, ids, vectors = _filled(100)
    matrix = weakref.ref(cache._matrix)  # a reference of its own would count as a view alive
    order = [k for k in np.random.default_rng(2).permutation(100).tolist() if k % 9 != 4]
    found, first = cache.get([ids[k] for k in order])
    assert found == [ids[k] for k in order] and np.array_equal(first, vectors[order])
    assert first.base is matrix()  # the same matrix: no second copy was made
    del first
    assert np.array_equal(cache.get(ids)[1], vectors)  # the rows left out are still there


@pytest.mark.parametrize("chunk", [7, 64])  # rows gathered at once: well under the matrix
@pytest.mark.parametrize("pattern", ["new ones in the middle", "some left out"])
def test_a_reorder_puts_aside_only_the_rows_moving_against_its_direction(monkeypatch, chunk, pattern):
    """New memories (appended at the end) asked for among the others shift most rows up by a few places; archived
    ones left out shift them down. Either way the rows move within the matrix with little put aside."""
    import tracemalloc

    monkeypatch.setattr("consolidation.stores.vector_cache.REORDER_CHUNK", chunk)
    cache, ids, vectors = _filled(2000, size=512)
    fresh = normalized(np.random.default_rng(3).standard_normal((10, 512)))
    cache.put([f"new{k}" for k in range(10)], fresh)
    if pattern == "new ones in the middle":
        order = ids[:500] + [f"new{k}" for k in range(10)] + ids[500:]
        expected = np.concatenate([vectors[:500], fresh, vectors[500:]])
    else:
        order = [memory_id for k, memory_id in enumerate(ids) if k % 50 != 3] + [f"new{k}" for k in range(10)]
        expected = np.concatenate([vectors[[k for k in range(2000) if k % 50 != 3]], fresh])
    matrix = weakref.ref(cache._matrix)
    tracemalloc.start()
    found, first = cache.get(order)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert found == order and np.array_equal(first, expected) and first.base is matrix()
    assert peak < 0.2 * vectors.nbytes  # most rows were not copied aside (the ids' bookkeeping is the rest)


@hyp_settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "drop", "get", "hold"]),
                          st.lists(st.integers(0, 29), min_size=1, max_size=30)), max_size=25))
def test_any_mix_of_writes_and_reads_agrees_with_a_plain_dictionary(steps):
    """Whatever is written, dropped, reordered or held, every read answers what a dict of vectors would, and
    nothing held ever changes."""
    rng = np.random.default_rng(5)
    cache, truth, held = VectorCache(4), {}, []
    for action, numbers in steps:
        keys = [f"k{n}" for n in numbers]
        if action == "put":
            distinct = list(dict.fromkeys(keys))
            fresh = normalized(rng.standard_normal((len(distinct), 4)))
            cache.put(distinct, fresh)
            truth.update(zip(distinct, fresh))
        elif action == "drop":
            cache.drop(keys)
            for key in keys:
                truth.pop(key, None)
        else:
            found, matrix = cache.get(keys)
            assert found == [k for k in keys if k in truth]
            assert np.allclose(matrix, np.array([truth[k] for k in found]).reshape(len(found), 4))
            if action == "hold":
                held.append((matrix, matrix.copy()))
        everything = cache.get(list(truth))
        assert np.allclose(everything[1], np.array([truth[k] for k in everything[0]]).reshape(-1, 4))
    assert all(np.array_equal(view, snapshot) for view, snapshot in held)


def test_a_new_memory_while_a_view_is_out_takes_a_new_row_instead_of_copying_the_matrix():
    cache, ids, vectors = _filled(100)
    found, view = cache.all()
    held = view.copy()
    cache.drop(ids[10:20])  # ten freed rows, under the view
    matrix = cache._matrix
    new = normalized(np.random.default_rng(9).standard_normal((3, 8)))
    cache.put(["n0", "n1", "n2"], new)
    assert cache._matrix is matrix  # not copied
    assert np.array_equal(view, held)  # what was handed out did not change
    assert all(cache._row_of[i] >= 100 for i in ("n0", "n1", "n2")) and len(cache._free) == 10
    assert np.allclose(cache.get(["n1"])[1], new[1:2])
    del view, found, matrix
    cache.put(["n3"], new[:1])  # nothing lent any more: a freed row is reused
    assert cache._row_of["n3"] < 100 and len(cache._free) == 9


def test_ids_come_back_as_the_copy_s_own_strings_so_what_keeps_them_holds_each_once():
    """An id read again from a store is a new string each time; the copy hands back (get) and maps (own) its
    own, so the recall index and the neighbour graph do not each keep another million of them."""
    cache, ids, _ = _filled(50)
    read_again = ["".join(list(memory_id)) for memory_id in ids]  # equal strings, other objects
    assert all(a == b and a is not b for a, b in zip(read_again, ids))
    found, _ = cache.get(read_again)
    assert found == ids and all(a is b for a, b in zip(found, ids))
    few, _ = cache.get(read_again[3:5] + ["absent"])  # copied rows, and an id it does not hold left out
    assert few == ids[3:5] and all(a is b for a, b in zip(few, ids[3:5]))
    owned = cache.own(read_again[:2] + ["absent"])
    assert owned == ids[:2] + ["absent"] and owned[0] is ids[0] and owned[1] is ids[1]
