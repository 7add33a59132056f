"""``hippo relink``: graphs an older hippo saved past ``vector_wide_from`` rows with fewer links than
hippo gives them today, linked again whole by the command (a subprocess, as a person runs it) and
saved; smaller graphs, the store and the answers stay as they were."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hippo import Memory, Settings
from hippo.datasets import SAMPLE
from hippo.memory.shards import HnswShard

# Small graphs standing in for large ones: exact search up to 30 rows a space, "wide" from 60.
SMALL = {"HIPPO_VECTOR_EXACT_MAX": "30", "HIPPO_VECTOR_WIDE_FROM": "60"}
OLDER = {**SMALL, "HIPPO_VECTOR_WIDE_LINKS": "16"}  # as a hippo before stop 60 linked every graph
QUESTION = "Which country is Tokyo the capital of?"


def _hippo(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hippo.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", **env})


def _settings() -> Settings:
    return Settings(vector_exact_max=30, vector_wide_from=60)


def _graphs(memory: Memory) -> dict[tuple[str, int], HnswShard]:
    return {(kind, code): shard for kind, index in memory.engine.state.vector_indexes()
            for code, shard in index.shards.items() if isinstance(shard, HnswShard)}


@pytest.fixture()
def older_store(tmp_path) -> Path:
    store = tmp_path / "older.db"
    done = _hippo(OLDER, "index", str(SAMPLE / "corpus.json"), "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    return store


def test_relink_links_an_older_stores_large_graphs_again_and_saves_them(older_store, caplog):
    with caplog.at_level(logging.WARNING, logger="hippo.engine"), Memory.open(str(older_store),
                                                                              settings=_settings()) as memory:
        graphs = _graphs(memory)
        older = {(kind, code): (len(graphs[kind, code]), graphs[kind, code].links)
                 for kind, index in memory.engine.state.vector_indexes() for code in index.relinkable()}
        small = {key: g.links for key, g in graphs.items() if len(g) < 60}
        before = [hit.id for hit in memory.recall(QUESTION, k=5).hits]
        # the store is opened and kept by this process: a relink elsewhere could not save, so it refuses
        held = _hippo(SMALL, "relink", "--store", str(older_store))
    assert older and all(rows >= 60 and links == 16 for rows, links in older.values())
    assert small and set(small.values()) == {16}  # graphs below 60 rows: not this command's business
    assert "hippo relink" in caplog.text  # opening said what to run
    assert held.returncode == 2 and "another process keeps the saved derived state" in held.stderr

    done = _hippo(SMALL, "relink", "--store", str(older_store), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {(g["kind"], g["shard"]): (g["rows"], g["links_before"]) for g in result["graphs"]} == older
    assert {g["links"] for g in result["graphs"]} == {32} and result["saved"]

    again = _hippo(SMALL, "relink", "--store", str(older_store))
    assert again.returncode == 0 and "nothing to relink" in again.stdout

    with Memory.open(str(older_store), settings=_settings()) as memory:
        assert memory.engine.cache.outcome == "loaded"  # the relinked graphs come from the saved state
        graphs = _graphs(memory)
        assert {key: graphs[key].links for key in older} == dict.fromkeys(older, 32)
        assert {key: graphs[key].links for key in small} == small
        assert [index.relinkable() for _, index in memory.engine.state.vector_indexes()] == [[], [], []]
        assert [hit.id for hit in memory.recall(QUESTION, k=5).hits] == before


def test_relink_of_a_store_linked_as_today_changes_nothing(tmp_path):
    store = tmp_path / "today.db"
    assert _hippo(SMALL, "index", str(SAMPLE / "corpus.json"), "--store", str(store)).returncode == 0
    saved = sorted(p.name for p in (tmp_path / "today.db.hippo").iterdir())
    done = _hippo(SMALL, "relink", "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["graphs"] == [] and not json.loads(done.stdout)["saved"]
    assert sorted(p.name for p in (tmp_path / "today.db.hippo").iterdir()) == saved  # no new snapshot
