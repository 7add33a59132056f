"""The ONNX Runtime encoder: the same vectors as sentence-transformers, without torch at run time.

It reproduces the model's pipeline step by step: the model's own fast
tokenizer (``tokenizer.json``) truncating at its ``max_seq_length``, the
transformer as an ONNX graph, then mean (or CLS) pooling over the attention
mask and L2 normalization. The fp32 graph gives torch's vectors (cosine 1.0);
the int8 graph is smaller and faster, at cosine ~0.998 to them.

The graph files are made on first use from the installed model
(``hippo.embed.export``) and cached under ``HIPPO_CACHE_DIR`` (default
``~/.cache/hippo``) in a folder keyed by the model and the versions of the
packages that made them. ``InferenceSession.run`` is safe to call from many
threads at once, so a server needs no lock around it.

Texts are spread over ``threads`` workers, each running the graph on one
core: the runs of small inputs are too short to split well inside one run
(measured on 2 busy cores: 1,500 titles at 133/s with two intra-op threads,
206/s with two single-threaded workers). A lone text (a query) is one run
on one thread.

The int8 graph runs each text alone: dynamic quantization picks its
activation scales per run, so in a batch a text's vector would depend on the
texts beside it (~0.01 per component), and the store's vector of a text
would differ from the same text's query vector. The fp32 graph has no such
coupling, so it batches texts of equal token length up to ``BATCH_TOKENS``
padded tokens: short strings (names, facts) go 32 at a time, which ran
4x faster (571 against 133 titles/s in the same run); passages stay alone,
where batching bought nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from hippo.embed.export import (
    FORMAT,
    INPUTS,
    ExportUnavailable,
    ModelLayout,
    export_fp32,
    quantize_int8,
    read_layout,
    versions,
)
from hippo.embed.filecache import cache_root, cached_file
from hippo.embed.sentence import encode_unique, resolve_model
from hippo.store.base import INT8_RECIPE


def model_cache_dir(layout: ModelLayout, name: str, root: Path | None = None) -> Path:
    """``<root>/onnx/<model>-<key>``: the key covers the model's files and the exporting versions."""
    files = sorted((p.name, p.stat().st_size) for p in layout.path.iterdir() if p.is_file())
    key = json.dumps({"path": str(layout.path.resolve()), "files": files, "versions": versions(),
                      "format": FORMAT, "layout": [layout.dim, layout.max_length, layout.pooling]}, sort_keys=True)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"
    return (root or cache_root()) / "onnx" / f"{slug}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def model_bytes(layout: ModelLayout, name: str, *, quantized: bool, root: Path | None = None) -> bytes:
    """The verified ONNX file of the model (fp32, or int8 made from it), built first when missing."""
    folder = model_cache_dir(layout, name, root)
    fp32 = folder / "model.onnx"

    def export(tmp: Path) -> None:
        _guarded(export_fp32, layout, tmp)

    def quantize(tmp: Path) -> None:
        cached_file(fp32, export)  # the int8 graph is made from the fp32 one
        _guarded(quantize_int8, fp32, tmp)

    return cached_file(folder / "model-int8.onnx", quantize) if quantized else cached_file(fp32, export)


def _guarded(step: Any, source: Any, out: Path) -> None:
    """Any failure of the exporter is an ``ExportUnavailable`` (the caller falls back to torch)."""
    try:
        step(source, out)
    except ExportUnavailable:
        raise
    except Exception as exc:  # the exporters raise many types; all mean "not here"
        raise ExportUnavailable(f"{step.__name__} failed: {type(exc).__name__}: {exc}") from exc


BATCH_TOKENS = 256
"""Padded tokens per fp32 run: 32 names of 8 tokens, or one passage."""


def length_batches(lengths: list[int], budget: int) -> list[list[int]]:
    """Row indices grouped into runs of equal token length, each at most ``budget`` tokens
    (a text longer than the budget runs alone). Equal lengths mean no padding at all."""
    batches: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        last = batches[-1] if batches else None
        if last and lengths[last[0]] == lengths[i] and (len(last) + 1) * lengths[i] <= budget:
            last.append(i)
        else:
            batches.append([i])
    return batches


class OnnxEmbedder:
    """Encodes with ONNX Runtime; vectors are L2-normalized float32."""

    def __init__(self, model: str, *, quantized: bool = True, threads: int | None = None,
                 cache_dir: Path | None = None) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ExportUnavailable(f"{exc.name} is not installed") from None
        self.name = model
        self.backend = INT8_RECIPE if quantized else "onnx"  # the vectors' identity in a store
        self._layout = read_layout(resolve_model(model))
        self.dim = self._layout.dim
        self.threads = threads or os.cpu_count() or 1
        self._batch_tokens = 1 if quantized else BATCH_TOKENS
        # Its threads start on first use: a query-only (or one-thread) embedder never starts one.
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="hippo-onnx")
        self._tokenizer = Tokenizer.from_file(str(self._layout.path / "tokenizer.json"))
        self._tokenizer.no_padding()  # each batch is padded to its own longest text below
        self._tokenizer.enable_truncation(max_length=self._layout.max_length)

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # parallel across texts instead (see the module's docstring)
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # Idle worker threads sleep instead of spinning: the cores are shared with the rest of hippo
        # (spaCy, PPR) and with other processes.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        data = model_bytes(self._layout, model, quantized=quantized, root=cache_dir)
        try:
            self._session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ExportUnavailable(f"onnxruntime cannot load the model: {exc}") from exc
        self._inputs = [i.name for i in self._session.get_inputs()]

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return encode_unique(texts, self._encode_unique)

    def _encode_unique(self, texts: list[str]) -> np.ndarray:
        tokens = [e.ids for e in self._tokenizer.encode_batch(texts, add_special_tokens=True)]
        batches = length_batches([len(t) for t in tokens], self._batch_tokens)
        inputs = [[tokens[i] for i in rows] for rows in batches]
        if self.threads > 1 and len(batches) > 1:
            encoded = list(self._pool.map(self._encode_batch, inputs))
        else:
            encoded = [self._encode_batch(batch) for batch in inputs]
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        for rows, block in zip(batches, encoded, strict=True):
            vectors[rows] = block
        return vectors

    def _encode_batch(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for i, row in enumerate(batch):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, {name: feeds[name] for name in self._inputs if name in INPUTS})[0]
        if self._layout.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
