"""Statement parameters the driver does not format for its debug log (``hippo.store.neo4j.params``):
they pack byte for byte as plain lists, and the RUN lines of a read and of a transaction's statement name
their lists by their lengths."""

from __future__ import annotations

import logging

import pytest

from hippo.store.neo4j.params import Unlogged, unlogged


def _packed(value: object) -> bytes:
    from neo4j._codec.packstream.v1 import Packer  # the packer the driver sends parameters with

    class Sink(bytearray):
        def write(self, data: bytes) -> None:
            self.extend(data)

    sink = Sink()
    Packer(sink).pack(value)
    return bytes(sink)


def test_unlogged_lists_pack_as_lists_and_format_as_their_length():
    params = {"query": [0.25] * 384, "owners": [[1, 2], [3, 4]], "k": 5, "spaces": None, "name": "x"}
    quiet = unlogged(params)
    assert type(quiet["query"]) is Unlogged and type(quiet["owners"]) is Unlogged
    assert quiet == params and quiet["k"] == 5 and quiet["spaces"] is None
    assert repr(quiet["query"]) == "[384 items]" and "0.25" not in repr(quiet)
    assert _packed(quiet) == _packed(params)


@pytest.mark.neo4j
def test_reads_and_transactions_send_their_lists_unformatted(neo4j_server: dict[str, str],
                                                             caplog: pytest.LogCaptureFixture):
    from hippo.store.neo4j import Neo4jStore

    store = Neo4jStore(neo4j_server["uri"], neo4j_server["user"], neo4j_server["password"])
    try:
        with caplog.at_level(logging.DEBUG, logger="neo4j"):
            rows = store.db.read("read_passage_cosines", "scoring passages", ids=["p-none"], query=[0.125] * 384)
            sent = store.db.transaction("counting", lambda tx: tx.run("RETURN size($x) AS n, $x[0] AS first",
                                                                       x=[0.125] * 384).single())
        assert rows and rows[0]["scores"] == []  # the statement ran with the lists as sent
        assert (sent["n"], sent["first"]) == (384, 0.125)  # a transaction's statements too
        runs = [r.getMessage() for r in caplog.records if "C: RUN" in r.getMessage()]
        assert runs and all("0.125" not in line for line in runs)
        assert sum("[384 items]" in line for line in runs) >= 2  # the read's and the transaction's
    finally:
        store.close()
