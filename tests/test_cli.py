"""The ``hippo`` command, run as a subprocess the way a person runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hippo.datasets import SAMPLE

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}


def hippo(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hippo.cli", *args], capture_output=True, text=True, env=ENV,
                          cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def indexed_store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("cli") / "cli.db"
    done = hippo("index", str(SAMPLE / "corpus.json"), "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["passages_added"] == 54 and result["entities_added"] > 100
    return store


def test_recall_prints_json_clues_and_hits(indexed_store):
    done = hippo("recall", "Who governs the island on which the painter Greta Südhof was born?",
                 "--store", str(indexed_store), "--json", "-k", "3")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["strategy"] == "graph"
    assert len(result["hits"]) == 3 and result["hits"][0]["title"]
    assert any(clue["seedIds"] for clue in result["clues"])  # the protocol's camelCase


def test_recall_prints_a_readable_table(indexed_store):
    done = hippo("recall", "Who invented the tide-clock?", "--store", str(indexed_store))
    assert done.returncode == 0, done.stderr
    assert "clues" in done.stdout and "draft hits" in done.stdout and "Tide-clock" in done.stdout


def test_stats_and_reindex_is_a_no_op(indexed_store):
    before = json.loads(hippo("stats", "--store", str(indexed_store), "--json").stdout)
    again = json.loads(hippo("index", str(SAMPLE / "corpus.json"), "--store", str(indexed_store), "--json").stdout)
    after = json.loads(hippo("stats", "--store", str(indexed_store), "--json").stdout)
    assert again["passages_added"] == 0 and again["passages_unchanged"] == 54
    assert before == after and after["passages"] == 54 and after["graph_mention_edges"] > 0


def test_a_malformed_corpus_is_one_clear_error_and_changes_nothing(indexed_store, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('[{"title": "x", "text": "y"}', encoding="utf-8")
    before = hippo("stats", "--store", str(indexed_store), "--json").stdout
    done = hippo("index", str(broken), "--store", str(indexed_store))
    assert done.returncode == 2
    assert "error:" in done.stderr and "not valid JSON" in done.stderr and "Traceback" not in done.stderr
    assert hippo("stats", "--store", str(indexed_store), "--json").stdout == before


def test_index_reads_text_files_and_jsonl(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "Aurora Bridge.md").write_text("The Aurora Bridge was designed by Lena Markov.")
    (tmp_path / "more.jsonl").write_text('{"title": "Lena Markov", "text": "Lena Markov was born in Riga."}\n')
    store = str(tmp_path / "files.db")
    done = hippo("index", str(tmp_path / "notes"), str(tmp_path / "more.jsonl"), "--store", store, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["passages_added"] == 2
    hits = json.loads(hippo("retrieve", "Riga", "--store", store, "--json", "-k", "1").stdout)
    assert hits[0]["title"] == "Lena Markov"


def test_empty_question_is_a_validation_error(indexed_store):
    done = hippo("recall", " ", "--store", str(indexed_store))
    assert done.returncode == 2 and "query: is empty" in done.stderr


def test_demo_runs_offline_on_the_sample_corpus(tmp_path):
    done = hippo("demo", "--questions", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Recall@5 over all 18 sample questions" in done.stdout


def test_remember_history_forget_restore(tmp_path):
    store = str(tmp_path / "notes.db")
    first = hippo("remember", "Ann prefers green tea.", "--id", "ann-drink", "--store", store)
    assert first.returncode == 0, first.stderr
    inserted = json.loads(first.stdout)
    assert inserted["action"] == "inserted" and inserted["searchable"] == {"bm25": True, "vector": True}
    second = json.loads(hippo("remember", "Ann switched to black coffee.", "--id", "ann-drink", "--store",
                              store).stdout)
    assert (second["action"], second["version"], second["uid"]) == ("updated", 2, inserted["uid"])
    lines = hippo("history", "ann-drink", "--store", store).stdout.splitlines()
    assert lines[0].startswith("v1 [superseded]") and "green tea" in lines[0]
    assert lines[1].startswith("v2 [live]") and "black coffee" in lines[1]

    preview = json.loads(hippo("forget", "--id", "ann-drink", "--dry-run", "--store", store).stdout)
    assert preview["dryRun"] is True and preview["facts"] and preview["undo"]["uid"] == inserted["uid"]
    assert "black coffee" in hippo("retrieve", "black coffee", "--store", store, "--mode", "bm25").stdout
    done = json.loads(hippo("forget", "--id", "ann-drink", "--store", store).stdout)
    assert done["passages"] == preview["passages"]
    assert "black coffee" not in hippo("retrieve", "black coffee", "--store", store, "--mode", "bm25").stdout
    twice = hippo("forget", "--id", "ann-drink", "--store", store)
    assert twice.returncode == 2 and "already forgotten" in twice.stderr
    back = hippo("restore", inserted["uid"], "--store", store)
    assert back.returncode == 0 and json.loads(back.stdout)["passages"] == done["passages"]
    assert "black coffee" in hippo("retrieve", "black coffee", "--store", store, "--mode", "bm25").stdout
    too_long = hippo("remember", "x" * 9000, "--store", store)
    assert too_long.returncode == 2 and "text" in too_long.stderr and "8192" in too_long.stderr
