"""When the saved state's journal is folded (``hippo.memory.fold``), and what a fold writes."""

from __future__ import annotations

import json

import pytest

import hippo.memory.fold as fold
from hippo.memory.fold import FoldPolicy, folds_kept
from hippo.memory.segments import graphs_of
from tests.test_persist import CORPUS, HNSW, _open, _outputs


def test_a_journal_is_folded_once_replaying_it_would_cost_more_than_a_few_folds():
    policy = FoldPolicy(snapshot_bytes=5_000_000_000, fold_seconds=20.0)
    for _ in range(11):  # 5.5 MB records, each followed in 5 s: far under a quarter of the bytes
        policy.followed(5_500_000, 5.0)
        assert not policy.due()
    policy.followed(5_500_000, 5.0)
    assert policy.replay_seconds == 60.0 and policy.journal_bytes == 66_000_000
    assert not policy.due()  # 3 folds' time exactly: not past it
    policy.followed(100, 0.01)
    assert policy.due()


def test_the_byte_rule_still_folds_a_journal_of_cheap_records():
    policy = FoldPolicy(snapshot_bytes=1_000_000_000, fold_seconds=100.0)
    policy.followed(250_000_000, 1.0)
    assert not policy.due()
    policy.followed(1, 0.0)
    assert policy.due()


def test_small_journals_are_never_due_while_writing_but_a_close_folds_what_an_open_would_replay():
    policy = FoldPolicy(snapshot_bytes=10_000_000, fold_seconds=0.01)
    policy.followed(1_000, fold.REPLAY_FLOOR - 0.5)
    assert not policy.due()  # a tiny fold, but replays under the floor are not worth one each
    assert policy.due_at_close()
    quiet = FoldPolicy(snapshot_bytes=10_000_000, fold_seconds=0.01)
    quiet.followed(100, 0.2)
    assert not quiet.due_at_close()


def test_a_manifest_without_a_measured_fold_is_given_one_by_its_bytes():
    assert FoldPolicy.of({"bytes": 3_000_000_000}).fold_seconds == pytest.approx(3e9 / fold.FOLD_BYTES_PER_SECOND)
    assert FoldPolicy.of({"bytes": 10, "fold_seconds": 0.5}).fold_seconds == 0.5  # one time, as first kept


def test_one_fold_slowed_by_other_work_does_not_loosen_the_bound_the_quiet_ones_set():
    manifest = {"bytes": 7_500_000_000, "fold_seconds": [11.8, 47.4]}
    manifest["fold_seconds"] = folds_kept(manifest, 335.6)
    assert manifest["fold_seconds"] == [11.8, 47.4, 335.6] and FoldPolicy.of(manifest).fold_seconds == 11.8
    for seconds in (40.0, 50.0):  # the quiet fold leaves the window: the least of the last three
        manifest["fold_seconds"] = folds_kept(manifest, seconds)
    assert manifest["fold_seconds"] == [335.6, 40.0, 50.0] and FoldPolicy.of(manifest).fold_seconds == 40.0


def test_a_fold_links_the_graphs_that_did_not_grow_and_rewrites_the_others(tmp_path, monkeypatch):
    settings = {**HNSW, "vector_graph_rows": 64}  # graphs of 64 rows: the early ones fill, then stay as they are
    monkeypatch.setattr(fold, "COMPACT_MIN", 0)
    monkeypatch.setattr(fold, "COMPACT_RATIO", 0.0)  # every write folds
    memory = _open(tmp_path / "g.db", **settings)
    memory.index(CORPUS.documents(0, 120))
    cache, state = memory.engine.cache, memory.engine.state
    first = json.loads((cache.directory / "MANIFEST.json").read_text())
    assert first["fold_seconds"] and min(first["fold_seconds"]) > 0  # the open's fold, then the write's
    graphs = {f"shard-fact-{key}.faiss": graph for code, shard in state.facts.shards.items()
              for key, graph in graphs_of(code, shard)}
    assert len(graphs) > 3
    inodes = {name: (cache.directory / first["generation"] / name).stat().st_ino for name in graphs}
    memory.index(CORPUS.documents(120, 124))
    second = json.loads((cache.directory / "MANIFEST.json").read_text())
    assert second["generation"] != first["generation"]
    assert second["fold_seconds"][:-1] == first["fold_seconds"][-(fold.FOLDS_KEPT - 1):]
    assert not (cache.directory / first["generation"]).exists()  # swept: the links keep the files
    linked = rewritten = 0
    for name, graph in graphs.items():
        after = cache.directory / second["generation"] / name
        assert graph.saved_as == f"{second['generation']}/{name}"
        if after.stat().st_ino == inodes[name]:
            linked += 1
            assert second["files"][f"{second['generation']}/{name}"] == first["files"][f"{first['generation']}/{name}"]
        else:
            rewritten += 1
    assert linked >= 3 and rewritten >= 1  # the last graph took the write's facts
    live = _outputs(memory)
    memory.close()
    reopened = _open(tmp_path / "g.db", **settings)
    assert reopened.engine.cache.outcome == "loaded" and _outputs(reopened) == live
    reopened.close()


def test_a_reopen_counts_what_replaying_its_journal_cost(tmp_path):
    memory = _open(tmp_path / "r.db")
    memory.index(CORPUS.documents(0, 40))
    memory.index(CORPUS.documents(40, 60))
    cache = memory.engine.cache
    journal = cache.directory / cache._manifest["journal"]  # noqa: SLF001
    assert journal.stat().st_size == cache._fold.journal_bytes > 0 and cache._fold.replay_seconds > 0  # noqa: SLF001
    cache.close()  # as a crash would: no fold at close
    memory.store.close()
    reopened = _open(tmp_path / "r.db")
    policy = reopened.engine.cache._fold  # noqa: SLF001
    assert reopened.engine.cache.outcome == "loaded"
    assert policy.journal_bytes == journal.stat().st_size and policy.replay_seconds > 0
    reopened.close()


def test_a_fold_writes_every_graph_where_files_cannot_be_linked(tmp_path, monkeypatch):
    import hippo.memory.persist as persist

    def refuse(source, target):  # noqa: ANN001, ANN202 - as a file system without hard links
        raise OSError("hard links not supported")

    settings = {**HNSW, "vector_graph_rows": 64}
    monkeypatch.setattr(fold, "COMPACT_MIN", 0)
    monkeypatch.setattr(fold, "COMPACT_RATIO", 0.0)
    monkeypatch.setattr(persist.os, "link", refuse)
    memory = _open(tmp_path / "n.db", **settings)
    memory.index(CORPUS.documents(0, 120))
    memory.index(CORPUS.documents(120, 124))
    live = _outputs(memory)
    memory.close()
    reopened = _open(tmp_path / "n.db", **settings)
    assert reopened.engine.cache.outcome == "loaded" and _outputs(reopened) == live
    reopened.close()
