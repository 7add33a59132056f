"""The ONNX Runtime encoder: the same vectors as sentence-transformers, without torch at run time.

It reproduces the model's pipeline step by step: the model's own fast
tokenizer (``tokenizer.json``) truncating at its ``max_seq_length``, the
transformer as an ONNX graph, then mean (or CLS) pooling over the attention
mask and L2 normalization. The fp32 graph gives torch's vectors (cosine 1.0);
the int8 graph is smaller and faster, at cosine ~0.995 to them.

The graph files are made on first use from the installed model
(``hippo.embed.export``) and cached under ``HIPPO_CACHE_DIR`` (default
``~/.cache/hippo``) in a folder keyed by the model and the versions of the
packages that made them. ``InferenceSession.run`` is safe to call from many
threads at once, so a server needs no lock around it.

Each text is its own run (``batch_size=1``). Dynamic int8 quantization picks
its activation scales per run, so in a batch a text's vector depends on the
texts beside it (and on their padding): ~0.01 per component, enough to make
the store's vector of a text differ from the same text's query vector. One
text per run keeps every vector a function of its text alone, wastes no work
on padding, and was no slower on these CPUs (MuSiQue passages: 58/s against
7/s at batch 64; short strings 695/s against 258/s, on a loaded machine).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from hippo.embed.export import FORMAT, INPUTS, ExportUnavailable, ModelLayout, export_fp32, quantize_int8, \
    read_layout, versions
from hippo.embed.filecache import cache_root, cached_file
from hippo.embed.sentence import encode_unique, resolve_model

Backend = str  # "onnx" or "onnx-int8"


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


class OnnxEmbedder:
    """Encodes with ONNX Runtime; vectors are L2-normalized float32."""

    def __init__(self, model: str, *, quantized: bool = True, threads: int | None = None, batch_size: int = 1,
                 cache_dir: Path | None = None) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ExportUnavailable(f"{exc.name} is not installed") from None
        self.name = model
        self.backend: Backend = "onnx-int8" if quantized else "onnx"
        self._layout = read_layout(resolve_model(model))
        self.dim = self._layout.dim
        self.threads = threads or os.cpu_count() or 1
        self._batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(self._layout.path / "tokenizer.json"))
        self._tokenizer.no_padding()  # each batch is padded to its own longest text below
        self._tokenizer.enable_truncation(max_length=self._layout.max_length)

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # Idle worker threads sleep instead of spinning: the cores are shared with the rest of hippo
        # (spaCy, PPR) and with other processes.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        data = model_bytes(self._layout, model, quantized=quantized, root=cache_dir)
        try:
            self._session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - a verified file the runtime cannot run: use torch
            raise ExportUnavailable(f"onnxruntime cannot load the model: {exc}") from exc
        self._inputs = [i.name for i in self._session.get_inputs()]

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return encode_unique(texts, self._encode_unique)

    def _encode_unique(self, texts: list[str]) -> np.ndarray:
        tokens = [e.ids for e in self._tokenizer.encode_batch(texts, add_special_tokens=True)]
        # Similar lengths in one batch waste less padding (when batch_size > 1).
        order = sorted(range(len(texts)), key=lambda i: len(tokens[i]))
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            vectors[rows] = self._encode_batch([tokens[i] for i in rows])
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
