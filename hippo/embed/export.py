"""A sentence-transformers model folder -> ONNX files, fp32 and int8, made locally on first use.

The fp32 graph comes from ``torch.onnx.export`` (the torch.export-based
exporter, torch's default since 2.9, which needs ``onnxscript``); the int8
one from ``onnxruntime.quantization.quantize_dynamic``. Nothing is
downloaded: the weights are the ones the model package ships. The graph
returns token embeddings; pooling and normalization stay in numpy
(``hippo.embed.onnx``), where the padding mask is at hand.

Quantization is per channel: one scale per output column of each weight
matrix. Per-tensor int8 (one scale per matrix) was measured at cosine 0.957
to the fp32 vectors on MuSiQue passages (min 0.93, and 0.86 on short titles);
per channel gives 0.995 (min 0.99) at the same speed. The feed-forward
down-projections (the MatMuls whose weight narrows, 1536 -> 384 in MiniLM)
stay in fp32: their inputs are GELU outputs with a long tail that int8 rounds
worst. Keeping them raises the cosine to 0.998 (min 0.996 on passages, 0.989
on titles) at ~10% of int8's encoding speed; quantizing them too had cost
1.75 points of R@5 on MuSiQue with the first round's engine.
"""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from hippo.errors import EmbeddingModelError

log = logging.getLogger("hippo.embed")

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "token_embeddings"
OPSET = 18
FORMAT = 2
"""Bumped when the files this module writes change shape; part of the cache key."""


class ExportUnavailable(EmbeddingModelError):
    """The ONNX files cannot be made here (a missing package, an unsupported model, a failed export)."""


@dataclass(frozen=True)
class ModelLayout:
    """What the ONNX encoder must reproduce of a sentence-transformers model folder."""

    path: Path
    dim: int
    max_length: int
    pooling: str  # "mean" or "cls"


def read_layout(path: str | Path) -> ModelLayout:
    """Transformer -> Pooling (mean or CLS) [-> Normalize]; anything else stays with torch."""
    root = Path(path)
    try:
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
        config = json.loads((root / "config.json").read_text(encoding="utf-8"))
        bert = json.loads((root / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ExportUnavailable(f"{root} is not a sentence-transformers model folder ({exc})") from None
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise ExportUnavailable(f"{root}: modules {kinds} are not Transformer, Pooling[, Normalize]")
    pooling_dir = next(m.get("path", "") for m in modules if m.get("type", "").endswith("Pooling"))
    try:
        pooling = json.loads((root / pooling_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ExportUnavailable(f"{root}: unreadable pooling config ({exc})") from None
    modes = {k.removeprefix("pooling_mode_").removesuffix("_token").removesuffix("_tokens")
             for k, v in pooling.items() if k.startswith("pooling_mode_") and v}
    if modes not in ({"mean"}, {"cls"}):
        raise ExportUnavailable(f"{root}: pooling {sorted(modes)} is not mean or CLS")
    return ModelLayout(path=root, dim=int(pooling.get("word_embedding_dimension") or config["hidden_size"]),
                       max_length=int(bert.get("max_seq_length") or 512), pooling=modes.pop())


def versions() -> dict[str, str | None]:
    """The packages whose versions change the exported bytes (part of the cache key)."""
    found: dict[str, str | None] = {}
    for name in ("torch", "transformers", "onnx", "onnxscript", "onnxruntime"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def export_fp32(layout: ModelLayout, out: Path) -> None:
    """Write the fp32 ONNX graph of the model's transformer to ``out`` (one self-contained file)."""
    try:
        import onnxscript  # noqa: F401  (the exporter needs it; fail here with a clear reason)
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ExportUnavailable(f"exporting to ONNX needs {exc.name}") from None

    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    model = AutoModel.from_pretrained(str(layout.path), local_files_only=True).eval()

    class ByKeyword(torch.nn.Module):
        """The exporter passes inputs by position; BERT-like forwards want keywords."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    # Three distinct tensors: one tensor passed twice is one graph input to the exporter, which then
    # names the inputs in an arbitrary order (input_ids and attention_mask came out swapped).
    sample, other = _sample(torch, 2, 8), _sample(torch, 3, 5)
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    exporter_log = logging.getLogger("torch.onnx")
    level = exporter_log.level
    exporter_log.setLevel(logging.ERROR)  # the exporter is chatty about axis names and missing torchvision
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                ByKeyword(model), sample, str(out), dynamo=True,
                input_names=list(INPUTS), output_names=[OUTPUT], opset_version=OPSET, external_data=False,
                dynamic_shapes={name: {0: batch, 1: seq} for name in INPUTS}, verbose=False,
            )
            expected = [model(**dict(zip(INPUTS, s, strict=True))).last_hidden_state.numpy() for s in (sample, other)]
    finally:
        exporter_log.setLevel(level)
    check_graph(out.read_bytes(), [dict(zip(INPUTS, (t.numpy() for t in s), strict=True)) for s in (sample, other)],
                expected)


def _sample(torch: Any, batch: int, seq: int) -> tuple[Any, Any, Any]:
    """(input_ids, attention_mask, token_type_ids) with the last row padded."""
    ids = torch.randint(1000, 2000, (batch, seq), generator=torch.Generator().manual_seed(batch * seq))
    mask = torch.ones((batch, seq), dtype=torch.int64)
    mask[-1, seq // 2 + 1 :] = 0
    return ids, mask, torch.zeros((batch, seq), dtype=torch.int64)


def check_graph(graph: bytes, feeds: list[dict[str, np.ndarray]], expected: list[np.ndarray],
                tolerance: float = 1e-3) -> None:
    """Refuse an exported graph whose token embeddings differ from torch's on the samples."""
    import onnxruntime

    session = onnxruntime.InferenceSession(graph, providers=["CPUExecutionProvider"])
    for feed, want in zip(feeds, expected, strict=True):
        got = session.run(None, feed)[0]
        error = float(np.abs(got - want)[feed["attention_mask"].astype(bool)].max())
        if not error <= tolerance:
            raise ExportUnavailable(f"the exported graph differs from torch by {error:.3g} on a {got.shape[:2]} "
                                    f"sample (tolerance {tolerance})")


def narrowing_matmuls(graph: Any) -> list[str]:
    """The MatMul nodes whose constant weight has more rows than columns: the feed-forward
    down-projections of a BERT-like encoder (attention and up-projections are square or widen)."""
    weights = {w.name: tuple(w.dims) for w in graph.initializer}
    return [node.name for node in graph.node if node.op_type == "MatMul" and len(node.input) == 2
            and len(weights.get(node.input[1], ())) == 2 and weights[node.input[1]][0] > weights[node.input[1]][1]]


def quantize_int8(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantization of the fp32 graph, per channel, into ``out``; the feed-forward
    down-projections stay fp32."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ExportUnavailable(f"quantizing needs {exc.name}") from None
    keep = narrowing_matmuls(onnx.load(str(fp32)).graph)
    quiet = logging.getLogger()  # quantize_dynamic warns on the root logger about pre-processing
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True, nodes_to_exclude=keep)
    finally:
        quiet.setLevel(level)
