"""remember / forget / restore / versions, and derived data that follows its sources.

The tests marked ``both`` run on SQLite and on a real Neo4j server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hippo import Memory
from hippo.errors import AlreadyForgotten, InvalidInput, NotForgotten, NotFound
from hippo.store import SQLiteStore

CANARY = "Zorblaxian"


def _dump(result: object) -> str:
    if isinstance(result, list):
        return json.dumps([r.model_dump(mode="json") for r in result])
    return result.model_dump_json()


def test_a_memory_is_found_by_keyword_vector_and_recall_on_return(memory_factory):
    memory = memory_factory()
    memory.index([{"title": "Harbour", "text": "The harbour of Caldry holds forty fishing boats."}])
    result = memory.remember("Ann's favourite ferry is the Morning Gull to Vell.", custom_id="ann-ferry",
                             space="user:ann")
    assert result.action == "inserted" and result.version == 1 and result.embedded
    assert result.searchable == {"bm25": True, "vector": True} and result.label.startswith("Ann's favourite")
    # No sleep: the same call sequence.
    assert memory.retrieve("Morning Gull", mode="bm25", k=1)[0].doc_id == result.uid
    assert memory.retrieve("which boat does Ann like to take", mode="dense", k=1)[0].doc_id == result.uid
    recalled = memory.recall("Which ferry does Ann like?", k=2, spaces=["user:ann"])
    assert recalled.hits[0].doc_id == result.uid
    assert memory.recall("Which ferry does Ann like?", k=2, spaces=["org"]).hits[0].doc_id != result.uid
    [item] = memory.memories(spaces=["user:ann"])
    assert (item.uid, item.custom_id, item.text) == (result.uid, "ann-ferry",
                                                     "Ann's favourite ferry is the Morning Gull to Vell.")


def test_custom_id_versions_and_history(memory_factory):
    memory = memory_factory()
    first = memory.remember("Ann drinks green tea.", custom_id="drink")
    same = memory.remember("Ann drinks green tea.", custom_id="drink")
    assert (same.action, same.uid, same.version) == ("unchanged", first.uid, 1)
    second = memory.remember("Ann switched to black coffee.", custom_id="drink", label="drink")
    assert (second.action, second.uid, second.version) == ("updated", first.uid, 2)
    assert [h.text for h in memory.retrieve("green tea", mode="bm25", k=5)] == []
    assert memory.retrieve("black coffee", mode="bm25", k=1)[0].doc_id == first.uid
    history = memory.history("drink")
    assert [(v.version, v.state, v.text) for v in history] == [
        (1, "superseded", "Ann drinks green tea."), (2, "live", "Ann switched to black coffee.")]
    assert history[0].retired_at is not None and history[1].retired_at is None
    assert memory.stats().passages == 1


def test_exact_duplicates_are_reused_and_near_duplicates_listed(open_memory):
    memory = open_memory()
    first = memory.remember("The deploy freeze starts on Friday at noon.")
    again = memory.remember("The deploy freeze starts on Friday at noon.")
    assert (again.action, again.uid) == ("reused", first.uid)
    created = memory.remember("The deploy freeze starts on Friday at noon.", on_near_duplicate="create")
    assert created.action == "inserted" and created.uid != first.uid
    assert created.near_duplicates[0].uid == first.uid and created.near_duplicates[0].similarity > 0.99
    near = memory.remember("The deploy freeze begins Friday at noon.")
    assert near.action == "inserted"
    assert {d.uid for d in near.near_duplicates} == {first.uid, created.uid}  # listed, not acted on
    assert memory.stats().passages == 3
    far = memory.remember("Ann's cat is called Pepper.")
    assert far.near_duplicates == []


def test_bad_remember_input_names_the_field_and_changes_nothing(open_memory):
    memory = open_memory()
    memory.remember("Something kept.", custom_id="kept")
    revision = memory.stats().revision
    bad = [
        ({"text": "x" * (8 * 1024 + 1)}, "text", 8192),
        ({"text": "é" * 4097}, "text", 8192),  # bytes, not characters
        ({"text": "   "}, "text", None),
        ({"text": "ok", "custom_id": "k" * 513}, "custom_id", 512),
        ({"text": "ok", "confidence": 1.5}, "confidence", 1.0),
        ({"text": "ok", "salience": float("nan")}, "salience", 1.0),
        ({"text": "ok", "on_near_duplicate": "merge"}, "on_near_duplicate", None),
        ({"text": "ok", "props": {"a": object()}}, "props", None),
        ({"text": 42}, "text", None),
        ({"text": "bad \ud800 surrogate"}, "text", None),
    ]
    for kwargs, field, limit in bad:
        text = kwargs.pop("text")
        with pytest.raises(InvalidInput) as caught:
            memory.remember(text, **kwargs)
        assert caught.value.field == field and caught.value.limit == limit, kwargs
    assert memory.stats().revision == revision
    assert [m.text for m in memory.memories()] == ["Something kept."]


def test_remember_instructions(open_memory):
    memory = open_memory()
    assert memory.get_remember_instructions() is None
    memory.set_remember_instructions("Remember decisions and preferences; never secrets.", space="user:ann")
    assert memory.remember("Ann prefers short answers.", space="user:ann").instructions.startswith("Remember decisions")
    assert memory.remember("Org fact.", space="org").instructions is None
    with pytest.raises(InvalidInput) as caught:
        memory.set_remember_instructions("x" * 4097, space="user:ann")
    assert caught.value.field == "text" and caught.value.limit == 4096
    memory.set_remember_instructions("", space="user:ann")
    assert memory.get_remember_instructions("user:ann") is None


# -- embedding that is slow or failing ---------------------------------------------------


class _SlowEmbedder:
    """The real embedder behind a gate: sleeps or raises while told to."""

    def __init__(self, inner, *, sleep: float = 0.0, failures: int = 0) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.sleep, self.failures, self.calls = sleep, failures, 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("encoder unavailable")
        time.sleep(self.sleep)
        return self.inner.encode(texts)


def test_a_slow_embedding_still_writes_and_is_embedded_in_the_background(embedder, tmp_path):
    slow = _SlowEmbedder(embedder)
    from hippo import Settings

    memory = Memory(SQLiteStore(tmp_path / "slow.db"), settings=Settings(remember_embed_timeout=0.2),
                    embedder=slow)
    try:
        slow.sleep = 3.0  # far above the timeout, so a loaded CI machine cannot blur the two
        clock = time.perf_counter()
        result = memory.remember("Zed keeps the spare key under the blue flowerpot.", custom_id="key")
        assert time.perf_counter() - clock < 2.5  # bounded by the timeout, not the encoder
        assert result.embedded is False and result.searchable == {"bm25": True, "vector": False}
        assert memory.retrieve("flowerpot", mode="bm25", k=1)[0].doc_id == result.uid
        slow.sleep = 0.0
        assert memory.wait_embedded(timeout=30)
        assert memory.retrieve("where is the spare key hidden", mode="dense", k=1)[0].doc_id == result.uid
        assert memory.remember("Zed keeps the spare key under the blue flowerpot.", custom_id="key").embedded
    finally:
        memory.close()
    reopened = Memory(SQLiteStore(tmp_path / "slow.db"), embedder=embedder)
    try:
        assert reopened.retrieve("where is the spare key hidden", mode="dense", k=1)[0].doc_id == result.uid
    finally:
        reopened.close()


def test_a_failing_encoder_is_retried_in_the_background_and_after_a_restart(embedder, tmp_path):
    failing = _SlowEmbedder(embedder, failures=1_000)
    memory = Memory(SQLiteStore(tmp_path / "fail.db"), embedder=failing)
    result = memory.remember("The boiler is serviced every October by Fennick & Sons.")
    assert result.embedded is False
    assert memory.retrieve("boiler serviced", mode="bm25", k=1)[0].doc_id == result.uid
    time.sleep(0.6)
    assert failing.calls >= 2  # the background worker kept trying
    failing.failures = 0
    assert memory.wait_embedded(timeout=30)
    assert memory.retrieve("boiler maintenance company", mode="dense", k=1)[0].doc_id == result.uid

    failing.failures = 1_000
    later = memory.remember("The chimney is swept each spring by Ada Lintel.")
    assert later.embedded is False
    memory.close()
    # A new process finds the records left without vectors and embeds them on open.
    reopened = Memory(SQLiteStore(tmp_path / "fail.db"), embedder=embedder)
    try:
        assert reopened.wait_embedded(timeout=30)
        assert reopened.retrieve("who cleans the chimney", mode="dense", k=1)[0].doc_id == later.uid
    finally:
        reopened.close()


def test_a_backlog_larger_than_one_write_is_embedded_in_one_pass(embedder, tmp_path):
    """Records left without vectors by many writes during an outage: one background pass embeds all
    of them, a write at a time, and each is then found by meaning."""
    failing = _SlowEmbedder(embedder, failures=1_000_000)
    places = ["attic", "cellar", "garage", "porch", "shed", "barn", "loft", "pantry", "study", "hall"]
    with Memory(SQLiteStore(tmp_path / "backlog.db"), embedder=failing) as memory:
        uids = [memory.remember(f"Tobin Vale number {i} stores the {places[i % 10]} key with Mirela Quist {i}.").uid
                for i in range(60)]
        waiting = len(memory.engine.view().unembedded)
        assert waiting > 256, waiting  # more than one background write holds
        failing.failures = 0
        assert memory.wait_embedded(timeout=60)
        assert not memory.engine.view().unembedded
        for i in (0, 59):
            found = memory.retrieve(f"Tobin Vale number {i} stores the {places[i % 10]} key", mode="dense", k=5)
            assert uids[i] in [h.doc_id for h in found]


# -- concurrency -------------------------------------------------------------------------


def test_concurrent_versions_of_one_custom_id_lose_no_update(open_memory, tmp_path):
    """Eight threads, on two engines over one file (as two processes would be): one memory,
    consecutive versions, every text in the history."""
    first = open_memory(SQLiteStore(tmp_path / "shared.db"))
    second = open_memory(SQLiteStore(tmp_path / "shared.db"))
    texts = [f"The on-call engineer this week is person number {i}." for i in range(8)]
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            (first if i % 2 else second).remember(texts[i], custom_id="on-call")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    history = first.history("on-call")
    assert [v.version for v in history] == list(range(1, 9))
    assert sorted(v.text for v in history) == sorted(texts)
    assert [v.state for v in history] == ["superseded"] * 7 + ["live"]
    assert len(first.memories()) == 1 and first.stats().passages == 1


WRITERS, WRITES = 8, 20  # processes, and remembers each: all on one custom_id


class _OneVector:
    """Every text the same unit vector, after as long as the real model takes for a short text on a
    free core: no model to load in a writer process, and a write window as wide as a real one."""

    name, dim = "test-one-vector", 8

    def encode(self, texts: list[str]) -> np.ndarray:
        time.sleep(0.02)
        return np.full((len(texts), self.dim), 1 / np.sqrt(self.dim), dtype=np.float32)


class _NoTriples:
    """An extractor (and a query parser) that finds nothing: spaCy takes seconds to load per process."""

    name = "test-nothing"

    def extract(self, passages: list) -> list:
        from hippo.extract.base import Extraction

        return [Extraction() for _ in passages]

    def query_phrases(self, query: str) -> list[str]:
        return []

    def query_hops(self, query: str) -> list[str]:
        return []


def _writer(url: str, writer: int) -> None:
    """One process: wait for the start signal, remember WRITES versions of one custom id, report."""
    from hippo.memory import engine
    from hippo.store import open_store

    engine.SpacyExtractor = _NoTriples  # the query parser (recall's, not remember's)
    memory = Memory(open_store(url), embedder=_OneVector(), extractor=_NoTriples())
    print("ready", flush=True)
    sys.stdin.readline()
    errors, versions = [], []
    for i in range(WRITES):
        try:
            versions.append(memory.remember(f"Writer {writer} wrote version text {i}.", custom_id="shared").version)
        except Exception as exc:  # noqa: BLE001 - reported to the test
            errors.append(f"{type(exc).__name__}: {exc}")
    memory.close()
    print(json.dumps({"errors": errors, "versions": versions}), flush=True)


def contend(url: str, logs: Path) -> None:
    """WRITERS processes remember WRITES versions each of one custom id on the store at ``url``, all at once.
    Their stderr goes to files in ``logs`` (a pipe nobody reads would fill and stop them)."""
    from hippo.store import open_store

    Memory(open_store(url), embedder=_OneVector(), extractor=_NoTriples()).close()  # schema first
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    writers = [subprocess.Popen([sys.executable, __file__, "writer", url, str(n)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=open(logs / f"writer{n}.err", "w"), text=True, env=env)
               for n in range(WRITERS)]
    try:
        for n, proc in enumerate(writers):
            assert proc.stdout.readline().strip() == "ready", (logs / f"writer{n}.err").read_text()
        for proc in writers:  # all at once: the writes contend
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = [json.loads(proc.stdout.readline()) for proc in writers]
    finally:
        for proc in writers:
            proc.kill() if proc.poll() is None else None
            proc.wait(30)
    assert [r["errors"] for r in reports] == [[]] * WRITERS
    with Memory(open_store(url), embedder=_OneVector(), extractor=_NoTriples()) as memory:
        history = memory.history("shared")
    assert [v.version for v in history] == list(range(1, WRITERS * WRITES + 1))
    assert sorted(v.text for v in history) == sorted(f"Writer {w} wrote version text {i}."
                                                     for w in range(WRITERS) for i in range(WRITES))
    assert sorted(v for r in reports for v in r["versions"]) == list(range(1, WRITERS * WRITES + 1))


def test_eight_processes_remembering_one_custom_id_surface_no_conflict(tmp_path):
    """Optimistic concurrency with backoff and jitter across processes (not threads): every write
    lands, as consecutive versions, with every text in the history. (Without the backoff and the
    reuse of a write's embedding across its retries, 51 of these 160 writes failed here.)"""
    contend(str(tmp_path / "contended.db"), tmp_path)


# -- forget and restore --------------------------------------------------------------------


def test_forget_then_restore_gives_identical_recall(memory_factory, sample_corpus):
    memory = memory_factory()
    memory.index(sample_corpus[:20])
    note = memory.remember("The Saltmarsh Accord was signed by the Veskari harbour council.", custom_id="accord")
    query = "Who signed the Saltmarsh Accord?"
    before = memory.recall(query, k=8)
    assert any(h.doc_id == note.uid for h in before.hits)

    preview = memory.forget(custom_id="accord", dry_run=True)
    assert preview.dry_run and preview.passages and preview.facts and preview.entities
    assert preview.edges["mention"] >= len(preview.entities) and preview.undo == {"method": "restore",
                                                                                 "uid": note.uid}
    assert memory.recall(query, k=8).model_dump(exclude={"timings"}) == before.model_dump(exclude={"timings"})

    done = memory.forget(custom_id="accord", reason="user asked")
    assert done.model_dump(exclude={"dry_run", "reason"}) == preview.model_dump(exclude={"dry_run", "reason"})
    after = memory.recall(query, k=8)
    assert all(h.doc_id != note.uid for h in after.hits)
    assert not {e.id for e in done.entities} & {s.id for s in after.seeds}
    with pytest.raises(AlreadyForgotten):
        memory.forget(note.uid)
    assert memory.history("accord")[-1].state == "forgotten"

    back = memory.restore(note.uid)
    assert back.passages == done.passages and back.entities == len(done.entities)
    again = memory.recall(query, k=8)
    assert again.model_dump(exclude={"timings"}) == before.model_dump(exclude={"timings"})
    with pytest.raises(NotForgotten):
        memory.restore(note.uid)
    with pytest.raises(NotFound):
        memory.forget("memory:nope")


def test_forget_without_cascade_refuses_to_orphan(open_memory):
    memory = open_memory()
    note = memory.remember("Mira Okafor founded the Tidewater Institute.")
    with pytest.raises(InvalidInput) as caught:
        memory.forget(note.uid, cascade=False)
    assert caught.value.field == "cascade"
    assert memory.retrieve("Tidewater", mode="bm25", k=1)[0].doc_id == note.uid
    with pytest.raises(InvalidInput) as caught:
        memory.forget()
    assert caught.value.field == "uid"


def test_a_forget_survives_reopening(tmp_path, embedder):
    path = tmp_path / "reopen.db"
    with Memory(SQLiteStore(path), embedder=embedder) as memory:
        note = memory.remember("The vault code changes every Tuesday.")
        memory.forget(note.uid)
    with Memory(SQLiteStore(path), embedder=embedder) as memory:
        assert memory.retrieve("vault code", mode="hybrid", k=3) == []
        assert memory.restore(note.uid).passages
        assert memory.retrieve("vault code", mode="bm25", k=1)[0].doc_id == note.uid


# -- documents: versions and deletion ------------------------------------------------------


def _canary_free(memory: Memory, queries: list[str]) -> None:
    """No output of any read names the canary."""
    outputs = []
    for query in queries:  # the caller's own query may come back (as the fallback clue): strip it
        outputs.append(_dump(memory.recall(query, k=10, n=10)).replace(json.dumps(query)[1:-1], ""))
        for mode in ("dense", "bm25", "hybrid"):
            outputs.append(_dump(memory.retrieve(query, k=10, mode=mode)))
    outputs.append(_dump(memory.memories()))
    blob = "\n".join(outputs).casefold()
    assert CANARY.casefold() not in blob


def test_deleting_a_document_removes_everything_derived_only_from_it(memory_factory, sample_corpus):
    memory = memory_factory()
    memory.index(sample_corpus[:12])
    planted = {"id": "doc:canary", "title": f"{CANARY} Ledger",
               "text": f"The {CANARY} Ledger was written by Oskar {CANARY} in Caldry. "
                       f"Caldry {CANARY}-trades with the harbour of Vell."}
    queries = [f"Who wrote the {CANARY} Ledger?", f"{CANARY}", f"Oskar {CANARY} Caldry", "Caldry harbour trade"]
    baseline = {q: memory.recall(q, k=10).model_dump(exclude={"timings"}) for q in queries}
    graph_before = memory.graph_stats()

    memory.index([planted])
    found = memory.recall(queries[0], k=3)
    assert found.hits[0].doc_id == "doc:canary"  # the canary is findable while it lives
    assert CANARY.casefold() in _dump(found).casefold()

    assert memory.delete_documents(["doc:canary", "doc:absent"]) == 1
    assert memory.delete_documents(["doc:canary"]) == 0  # a repeat deletes nothing
    _canary_free(memory, queries)
    for query in queries:  # as if the document had never been indexed
        assert memory.recall(query, k=10).model_dump(exclude={"timings"}) == baseline[query]
    assert memory.graph_stats()["passages"] == graph_before["passages"] == memory.stats().passages


def test_reindexing_a_changed_document_replaces_its_passages(memory_factory):
    memory = memory_factory()
    town = {"id": "doc:town", "title": "Caldry", "text": f"Caldry is a harbour town ruled by {CANARY}."}
    first = memory.index([town])
    assert first.documents_updated == 0 and first.passages_added == 1
    same = memory.index([town])
    assert (same.passages_added, same.passages_unchanged, same.revision) == (0, 1, first.revision)
    changed = memory.index([dict(town, text="Caldry is a mountain village ruled by Hesk.")])
    assert (changed.documents_updated, changed.passages_added, changed.passages_retired) == (1, 1, 1)
    _canary_free(memory, [f"Who rules Caldry? {CANARY}", "harbour town"])
    assert memory.retrieve("Hesk", mode="bm25", k=1)[0].doc_id == "doc:town"
    assert [v.state for v in memory.history(uid="doc:town")] == ["superseded", "live"]
    assert memory.stats().passages == 1


def test_edge_weights_follow_live_provenance_and_never_accumulate(open_memory, sample_corpus):
    memory = open_memory()
    memory.index(sample_corpus[:10])
    edges = memory.graph_stats()
    view = memory.engine.state.projection.view(None)
    weights = sorted(view.graph.es["weight"])
    for _ in range(3):  # HippoRAG re-adds synonym edges on every insert; here nothing moves
        memory.index(sample_corpus[:10])
    assert memory.graph_stats() == edges
    assert sorted(memory.engine.state.projection.view(None).graph.es["weight"]) == weights
    doc = dict(sample_corpus[0], id="doc:zero")
    memory.index([doc])
    grown = memory.engine.state.projection.view(None).graph.ecount()
    memory.delete_documents(["doc:zero"])
    assert memory.engine.state.projection.view(None).graph.ecount() < grown


def test_reads_during_writes_never_see_half_an_update(open_memory, sample_corpus):
    memory = open_memory()
    memory.index(sample_corpus[:10])
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                memory.recall("Who built the harbour of Caldry?", k=3)
                memory.retrieve("harbour", mode="hybrid", k=3)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                return

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        uids = [memory.remember(f"Harbour note {i}: pier {i} was rebuilt by crew {i}.").uid for i in range(12)]
        memory.forget(uids[0])
        memory.index(sample_corpus[10:20])
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert not errors, errors[0]
    assert memory.retrieve("pier 5 rebuilt crew 5", mode="bm25", k=1)[0].doc_id == uids[5]


if __name__ == "__main__" and sys.argv[1:2] == ["writer"]:
    _writer(sys.argv[2], int(sys.argv[3]))
