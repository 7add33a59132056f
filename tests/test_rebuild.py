"""Rebuilding the derived state from the store reads the vectors a part at a time."""

from __future__ import annotations

import hippo.store.sqlite_embedding as sqlite_embedding
from hippo.store import SQLiteStore
from tests.test_persist import CORPUS, _open, _outputs


def test_a_rebuild_reads_each_kind_in_parts_and_answers_as_the_live_state(tmp_path, monkeypatch):
    memory = _open(tmp_path / "s.db")
    memory.index(CORPUS.documents(0, 120))
    memory.remember("E1v0 r1 E2v0 note.", custom_id="n1", space="user:ann")
    live = _outputs(memory)
    memory.close()

    parts: dict[str, list[int]] = {}
    batches = SQLiteStore.vector_batches

    def counted(self, kind):  # noqa: ANN001, ANN202
        for ids, hashes, matrix in batches(self, kind):
            parts.setdefault(kind, []).append(len(matrix))
            yield ids, hashes, matrix

    def whole(self, kind):  # noqa: ANN001, ANN202
        raise AssertionError("a rebuild read a whole kind at once")

    monkeypatch.setattr(sqlite_embedding, "_VECTOR_BATCH", 97)
    monkeypatch.setattr(SQLiteStore, "vector_batches", counted)
    monkeypatch.setattr(SQLiteStore, "load_vectors", whole)
    rebuilt = _open(tmp_path / "s.db", derived_cache=False)
    assert _outputs(rebuilt) == live
    state = rebuilt.engine.state
    assert not state.unembedded
    assert sum(parts["fact"]) == len(state.facts) > 1000 and max(parts["fact"]) == 97
    assert sum(parts["passage"]) == len(state.passages) and sum(parts["entity"]) >= len(state.entities)
    rebuilt.close()


def test_records_stored_without_a_vector_wait_for_one_after_a_rebuild(tmp_path):
    memory = _open(tmp_path / "s.db")
    memory.index(CORPUS.documents(0, 20))
    state = memory.engine.state
    fact_id, passage_id = state.projection.fact_ids[3], state.projection.record_ids[0]
    memory.close()
    store = SQLiteStore(tmp_path / "s.db")
    with store._transaction() as db:  # noqa: SLF001 - as a write whose vectors were still being embedded
        for table, rid in (("facts", fact_id), ("passages", passage_id)):
            db.execute(f"UPDATE {table} SET embed_hash = 'pending' WHERE id = ?", (rid,))  # noqa: S608
    store.close()
    rebuilt = _open(tmp_path / "s.db", derived_cache=False)
    assert rebuilt.engine.state.unembedded == {("fact", fact_id), ("passage", passage_id)}
    rebuilt.close()
