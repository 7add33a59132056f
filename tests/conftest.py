"""Shared fixtures: one embedder and one spaCy pipeline for the whole run."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # tests must never reach for a model hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hippo import Memory, Settings
from hippo.datasets import SAMPLE, datasets_root
from hippo.embed import SentenceEmbedder
from hippo.store import SQLiteStore, Store


@pytest.fixture(scope="session")
def embedder() -> SentenceEmbedder:
    return SentenceEmbedder("all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def sample_corpus() -> list[dict]:
    return json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    root = datasets_root()
    if not root.is_dir():
        pytest.fail(f"shared datasets not found at {root}; set HIPPO_DATASETS")
    return root


@pytest.fixture
def open_memory(embedder: SentenceEmbedder, tmp_path: Path) -> Iterator[Callable[..., Memory]]:
    """Open memories on fresh SQLite files (or a given store); all closed at teardown."""
    opened: list[Memory] = []

    def factory(store: Store | None = None, **settings: object) -> Memory:
        memory = Memory(store or SQLiteStore(tmp_path / f"m{len(opened)}.db"), settings=Settings(**settings),
                        embedder=embedder)
        opened.append(memory)
        return memory

    yield factory
    for memory in opened:
        memory.close()


@pytest.fixture(scope="module")
def sample_memory(embedder: SentenceEmbedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    """The sample corpus, indexed once per module."""
    corpus = json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))
    memory = Memory(SQLiteStore(tmp_path_factory.mktemp("sample") / "sample.db"), embedder=embedder)
    memory.index(corpus)
    yield memory
    memory.close()
