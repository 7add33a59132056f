"""The encoders (hippo.embed): ONNX against torch, the model-file cache, the fallback, encoding less."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from hippo import Memory, Settings
from hippo.embed import SentenceEmbedder, open_embedder
from hippo.embed.export import read_layout
from hippo.embed.filecache import cached_file, read_verified
from hippo.embed.onnx import OnnxEmbedder, length_batches, model_cache_dir
from hippo.embed.sentence import resolve_model
from hippo.store import SQLiteStore
from tests.counting import CountingEmbedder

MODEL = "all-MiniLM-L6-v2"
TEXTS = ["Göttingen", "Thomas Südhof was born in Göttingen.", "the capital of Japan", "Göttingen",
         "Tokyo\n" + "Tokyo is the capital of Japan and its largest city. " * 40]  # > 256 tokens: truncated


def test_onnx_fp32_gives_torch_vectors_and_int8_stays_close(embedder):
    torch_vectors = SentenceEmbedder(MODEL).encode(TEXTS)
    fp32 = embedder.encode(TEXTS)  # the suite's encoder is the default one
    assert embedder.backend == "onnx"
    quantized = open_embedder(Settings(embedding_backend="onnx-int8"))
    int8 = quantized.encode(TEXTS)
    assert fp32.shape == int8.shape == (len(TEXTS), 384) and fp32.dtype == np.float32
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    assert (fp32 * torch_vectors).sum(axis=1).min() > 0.9999
    assert (int8 * torch_vectors).sum(axis=1).min() > 0.97
    assert np.array_equal(int8[0], int8[3])  # a repeated text: encoded once, the same row
    alone = np.stack([quantized.encode([t])[0] for t in TEXTS])
    assert np.array_equal(alone, int8)  # a text's vector does not depend on the texts encoded with it


def test_length_batches_group_equal_lengths_within_the_budget():
    lengths = [5, 3, 5, 200, 5, 3, 5]
    batches = length_batches(lengths, budget=12)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len({lengths[i] for i in b}) == 1 for b in batches)  # no padding inside a run
    assert all(len(b) * lengths[b[0]] <= 12 or len(b) == 1 for b in batches)
    assert [len(b) for b in batches] == [2, 2, 2, 1]  # 3+3 | 5+5 | 5+5 | 200 alone
    assert length_batches(lengths, budget=1) == [[i] for i in sorted(range(7), key=lambda i: lengths[i])]


def test_fp32_runs_batched_and_spread_over_workers_give_each_text_its_own_vector(embedder):
    names = [f"Entity number {i}" for i in range(40)] + ["Göttingen", "Tokyo", "Caldry"]
    together = embedder.encode(names)  # equal-length names share runs, on several workers
    alone = np.stack([embedder.encode([n])[0] for n in names])
    assert np.abs(together - alone).max() < 1e-5
    assert (together * alone).sum(axis=1).min() > 0.99999


def _installed_files(tmp: Path) -> Path:
    """A cache folder under ``tmp`` holding copies of the already built model files."""
    layout = read_layout(resolve_model(MODEL))
    source, target = model_cache_dir(layout, MODEL), model_cache_dir(layout, MODEL, tmp)
    OnnxEmbedder(MODEL)  # make sure the default cache holds both files
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.lock"))
    return target


def test_a_truncated_cached_model_is_rebuilt_not_loaded(tmp_path, caplog):
    folder = _installed_files(tmp_path)
    int8 = folder / "model-int8.onnx"
    good = int8.read_bytes()
    int8.write_bytes(good[: len(good) // 2])
    with caplog.at_level(logging.WARNING, logger="hippo.embed"):
        rebuilt = OnnxEmbedder(MODEL, cache_dir=tmp_path)
    assert "does not match its checksum" in caplog.text
    assert read_verified(int8) is not None and int8.stat().st_size > len(good) // 2
    assert np.allclose(rebuilt.encode(TEXTS[:3]), OnnxEmbedder(MODEL).encode(TEXTS[:3]), atol=1e-5)


def test_a_failed_build_leaves_no_partial_file(tmp_path):
    target = tmp_path / "models" / "model.onnx"

    def broken(out: Path) -> None:
        out.write_bytes(b"half a model")
        raise RuntimeError("exporter crashed")

    with pytest.raises(RuntimeError, match="exporter crashed"):
        cached_file(target, broken)
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.onnx.lock"]
    assert cached_file(target, lambda out: out.write_bytes(b"whole")) == b"whole"


def test_a_failed_export_falls_back_to_torch_with_one_line(tmp_path, monkeypatch, caplog):
    import torch

    def crash(model, args, path, **kwargs):
        Path(path).write_bytes(b"partial graph")
        raise RuntimeError("unsupported operator")

    monkeypatch.setattr(torch.onnx, "export", crash)
    monkeypatch.setenv("HIPPO_CACHE_DIR", str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="hippo.embed"):
        fallback = open_embedder(Settings(embedding_backend="onnx"))
    assert fallback.backend == "torch"
    [line] = [r.getMessage() for r in caplog.records if r.name == "hippo.embed"]
    assert "onnx is unavailable" in line and "unsupported operator" in line and "using torch" in line
    assert not list(tmp_path.rglob("*.onnx")) and not list(tmp_path.rglob("*.tmp*"))


def test_without_onnxruntime_the_encoder_is_torch(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime now raises ImportError
    with caplog.at_level(logging.WARNING, logger="hippo.embed"):
        fallback = open_embedder(Settings())
    assert isinstance(fallback, SentenceEmbedder)
    [line] = [r.getMessage() for r in caplog.records if r.name == "hippo.embed"]
    assert line == "embedding backend onnx is unavailable (onnxruntime is not installed); using torch"


_RACER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from hippo.embed.filecache import cached_file

    target, log = Path(sys.argv[1]), Path(sys.argv[2])

    def build(out):
        with log.open("a") as f:
            f.write("built\\n")
        out.write_bytes(b"x" * 1_000_000)
        time.sleep(1.0)  # a slow export: the other process arrives meanwhile
        out.write_bytes(b"model bytes " * 100_000)

    print(len(cached_file(target, build)))
""")


def test_two_processes_racing_on_first_use_both_end_with_a_valid_file(tmp_path):
    target, log = tmp_path / "cache" / "model.onnx", tmp_path / "builds.log"
    racers = [subprocess.Popen([sys.executable, "-c", _RACER, str(target), str(log)], stdout=subprocess.PIPE,
                               text=True) for _ in range(2)]
    outputs = [r.communicate(timeout=120)[0].strip() for r in racers]
    assert [r.returncode for r in racers] == [0, 0]
    assert outputs == [str(len(b"model bytes ") * 100_000)] * 2
    assert read_verified(target) == b"model bytes " * 100_000
    assert log.read_text().count("built") == 1  # the second one waited for the first one's file
    assert not list(target.parent.glob("*.tmp*"))


def test_indexing_encodes_each_text_once_and_never_what_the_store_has(tmp_path, embedder):
    counting = CountingEmbedder(embedder)
    docs = [{"title": f"Town {n}", "text": f"Town {n} lies in Norrland. Norrland borders Finland."} for n in range(4)]
    with Memory(SQLiteStore(tmp_path / "m.db"), embedder=counting) as memory:
        first = memory.index(docs)
        assert len(counting.texts) == len(set(counting.texts)) == first.vectors_encoded
        assert counting.texts.count("norrland") == 1  # an entity named by four passages
        counting.texts.clear()
        memory.index([{"title": "Town 9", "text": "Town 9 lies in Norrland. Norrland borders Finland."}])
        assert "norrland" not in counting.texts and "finland" not in counting.texts
        assert "Town 9\nTown 9 lies in Norrland. Norrland borders Finland." in counting.texts
