"""An erase leaves no text behind: no key of the graph server (read over its socket) and no file under the data
directory (compressed strings decompressed) holds the identifier or an erased memory's text; the server logs no
query; the purge's record keeps a keyed digest of its match, never the match."""

from __future__ import annotations

import time

from consolidation.identifiers import comparable, digest, recovered

from conftest import add_memory, axis, days_ago, vector_at
from tests.stored_bytes import files_holding, keys_holding, readable, server_values

IDENTIFIER = "dana@x.io"
# Texts long enough for the RDB format to compress them (strings of more than 20 bytes), each with a word found
# nowhere else, so a search for the word finds the text wherever a copy of it is kept.
ERASED = ["Invoices for the Quorvath account go to dana@x.io every month",
          "Escalate Blenkiro outages to DANA@X.IO before noon on weekdays"]
KEPT = "The backup contact for Quorvath is adana@x.io, not the primary"
LOOK_ALIKES = (b"adana@x.io", "adanaˍxˍio".encode())  # another identifier holding it: kept


def _post(client, auth, content, vector):
    answer = client.post("/memory", headers=auth, json={"content": content, "embedding": [float(x) for x in vector]})
    assert answer.status_code == 201, answer.get_json()
    return answer.get_json()["memory"]["id"]


def test_after_an_erase_no_key_and_no_file_holds_the_identifier_or_an_erased_text(client, auth, services,
                                                                                  settings):
    socket = services.stores.graph.falkor.socket_path
    erased = [_post(client, auth, text, axis(i)) for i, text in enumerate(ERASED)]
    kept = _post(client, auth, KEPT, axis(5))
    # A run whose records quote them: a supersession's reason and its report.
    older = add_memory(services, vector=vector_at(0.9, axis(8), axis(9)), timestamp=days_ago(3),
                       content="The Zentrafolk support address is dana@x.io.")
    add_memory(services, vector=vector_at(0.9, axis(8), axis(10)), timestamp=days_ago(1),
               content="The Zentrafolk support address is now help@x.io.")
    services.engine.run(["dedup"], full=True)
    assert services.stores.graph.get_memory(older).get("superseded_by")
    time.sleep(3)  # FalkorDB wrote its query log a few seconds after each query, when it kept one
    assert not [key for key in server_values(socket) if key.startswith(b"telemetry")]

    # The texts are in the snapshot, compressed: a search of the raw bytes alone misses them, ours does not.
    services.stores.graph.falkor.command("SAVE")
    snapshot = (settings.data_dir / "falkordb" / "graph.rdb").read_bytes()
    whole = ERASED[1].encode()
    assert whole not in snapshot and any(whole in part for part in readable(snapshot))

    preview = client.post("/memories/purge", headers=auth, json={"match": IDENTIFIER}).get_json()
    assert preview["matched"] == 3 and preview["refused"] is None
    done = client.post("/memories/purge", headers=auth, json={"match": IDENTIFIER, "dry_run": False,
                                                               "erase": True}).get_json()
    assert done["deleted"] == 3 and not services.stores.graph.existing_ids([*erased, older])
    needles = [IDENTIFIER.encode(), "danaˍxˍio".encode(), b"Quorvath account", b"Blenkiro",
               *(text.encode() for text in ERASED)]
    assert keys_holding(socket, needles, LOOK_ALIKES) == {}
    # The request record keeps the digest of the match, never the match.
    plans = services.stores.graph.falkor.records("MATCH (r:RequestRecord {kind: 'purge'}) RETURN r.plan")
    assert plans and IDENTIFIER not in plans[0][0] and digest(IDENTIFIER, settings.record_key) in plans[0][0]
    time.sleep(3)
    assert keys_holding(socket, needles, LOOK_ALIKES) == {}
    assert services.stores.graph.get_memory(kept)["content"] == KEPT
    services.close()  # the next save: every store written to its files
    assert files_holding(settings.data_dir, needles, LOOK_ALIKES) == {}
    assert files_holding(settings.data_dir, [b"Quorvath is adana"]) != {}  # what stays is still found


def test_the_query_log_is_turned_off_on_the_server(services):
    falkor = services.stores.graph.falkor
    assert falkor.command("GRAPH.CONFIG", "GET", "MAX_INFO_QUERIES") == ["MAX_INFO_QUERIES", 0]
    assert falkor.client.config_get("slowlog-log-slower-than") == {"slowlog-log-slower-than": "-1"}


def test_a_digest_finds_its_identifier_again_only_where_it_stands():
    key = b"k" * 32
    kept = digest("Dana  Smith", key)
    assert kept != digest("Dana Smith", b"another key" * 3)  # keyed: without the key, no guess can be checked
    length = len(comparable("Dana Smith"))
    assert recovered(["nothing here", "We met DANA   SMITH yesterday"], kept, length, key) == "dana smith"
    assert recovered(["Dana Smyth called"], kept, length, key) is None
    assert recovered(["We met Dana Smith"], kept, length, b"another key" * 3) is None
