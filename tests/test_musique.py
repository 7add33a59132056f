"""The acceptance check on real data: graph recall beats dense on MuSiQue
with HippoRAG's GPT-3.5 OpenIE triples imported."""

from __future__ import annotations

import pytest

from hippo import Memory, Settings
from hippo.datasets import load_dataset
from hippo.evaluation import recall_at
from hippo.extract import OpenIEImport
from hippo.store import SQLiteStore


@pytest.mark.slow
def test_graph_recall_at_5_is_at_least_dense_on_musique(embedder, shared_datasets, tmp_path):
    dataset = load_dataset(shared_datasets / "hipporag_musique_train100")
    assert dataset.openie_file is not None
    # Passages as long as MuSiQue's longest paragraph, so every one matches its OpenIE record.
    settings = Settings(passage_chars=2000)
    with Memory(SQLiteStore(tmp_path / "musique.db"), embedder=embedder, settings=settings) as memory:
        importer = OpenIEImport.from_file(dataset.openie_file, fallback=memory.extractor)
        result = memory.index(dataset.documents, extractor=importer)
        assert result.passages_added == len(dataset.documents) == 1890
        assert importer.missed == 0, "every corpus passage is in the OpenIE file"
        graph = dense = 0.0
        for question in dataset.questions:
            gold = dataset.gold_document_ids(question)
            graph += recall_at(memory.recall(question.question, k=10).hits, gold, 5)
            dense += recall_at(memory.retrieve(question.question, k=10), gold, 5)
    graph, dense = graph / len(dataset.questions), dense / len(dataset.questions)
    print(f"musique_train100 R@5 with imported OpenIE: graph {graph:.3f}, dense {dense:.3f}")
    assert graph >= dense
