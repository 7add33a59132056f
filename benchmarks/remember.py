"""Speed of the small-text fast path: ``remember`` latency on the embedded store.

Over a memory already holding the sample corpus (54 passages), it measures
p50/p95/p99 of:

- ``remember`` with embedding (the normal path: extract, embed, write, index);
- ``remember`` without embedding (the encoder raises at once: the path a
  timed-out embedding takes; the memory is written for keywords and the graph
  and embedded later in the background, which is switched off here);
- ``remember`` of an unchanged text with its custom id (the idempotent repeat);
- ``forget`` and ``restore`` of one memory;
- the baseline in the same run: ``index`` of the same texts as one-document
  calls (the corpus path).

    python benchmarks/remember.py            # 200 memories each
    python benchmarks/remember.py --smoke
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

try:
    from benchmarks.common import (
        RESULTS,
        log,
        machine_info,
        machine_line,
        markdown_table,
        offline,
        percentiles,
        write_outputs,
    )
except ImportError:  # run as ``python benchmarks/remember.py``
    from common import RESULTS, log, machine_info, machine_line, markdown_table, offline, percentiles, write_outputs  # type: ignore

offline()

import numpy as np  # noqa: E402

import hippo  # noqa: E402
from hippo.datasets import SAMPLE  # noqa: E402
from hippo.embed import SentenceEmbedder  # noqa: E402
from hippo.store import SQLiteStore  # noqa: E402

PEOPLE = ["Ann", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jun"]
THINGS = ["green tea", "the night train", "Rust", "short answers", "the Vell ferry", "dark mode", "oat milk",
          "the harbour walk", "Friday deploys", "vinyl records"]
VERBS = ["prefers", "avoids", "asked about", "decided on", "is learning", "keeps forgetting"]


def texts(n: int, salt: str) -> list[str]:
    """Distinct, realistic one-line memories."""
    return [f"{PEOPLE[i % 10]} {VERBS[i % 6]} {THINGS[(i // 10) % 10]} ({salt} note {i})." for i in range(n)]


class _NoEncoder:
    """An encoder that is down: every call raises at once."""

    def __init__(self, inner: SentenceEmbedder) -> None:
        self.name, self.dim = inner.name, inner.dim

    def encode(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("encoder down")


def timed(calls: Sequence[Callable[[], Any]]) -> list[float]:
    samples = []
    for call in calls:
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def open_memory(path: Path, embedder: Any) -> hippo.Memory:
    memory = hippo.Memory(SQLiteStore(path), embedder=embedder)
    memory.index(json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8")))
    return memory


def run(n: int, scratch: Path) -> dict[str, dict[str, float]]:
    embedder = SentenceEmbedder("all-MiniLM-L6-v2")
    rows: dict[str, dict[str, float]] = {}
    memory = open_memory(scratch / "with.db", embedder)
    memory.remember("warm-up: load spaCy and the encoder.")
    with_embedding = texts(n, "embedded")
    rows["remember (embedded)"] = percentiles(timed([lambda t=t: memory.remember(t) for t in with_embedding]))
    keyed = texts(n, "keyed")
    for i, text in enumerate(keyed):
        memory.remember(text, custom_id=f"k{i}")
    rows["remember (unchanged, same custom_id)"] = percentiles(
        timed([lambda t=t, i=i: memory.remember(t, custom_id=f"k{i}") for i, t in enumerate(keyed)]))
    rows["remember (new version, same custom_id)"] = percentiles(
        timed([lambda t=t, i=i: memory.remember(t + " Updated.", custom_id=f"k{i}") for i, t in enumerate(keyed)]))
    uids = [memory.remember(t).uid for t in with_embedding[: max(1, n // 4)]]
    rows["forget"] = percentiles(timed([lambda u=u: memory.forget(u) for u in uids]))
    rows["restore"] = percentiles(timed([lambda u=u: memory.restore(u) for u in uids]))
    baseline = texts(n, "indexed")
    rows["baseline: index() one document per call"] = percentiles(
        timed([lambda t=t: memory.index([t]) for t in baseline]))
    memory.close()

    down = hippo.Memory(SQLiteStore(scratch / "without.db"), embedder=_NoEncoder(embedder))
    down.engine.background.close()  # measure the write path alone; nothing embeds later
    down.remember("warm-up: load spaCy.")
    rows["remember (no embedding: encoder down)"] = percentiles(
        timed([lambda t=t: down.remember(t) for t in texts(n, "unembedded")]))
    down.close()
    return rows


def render(record: dict[str, Any]) -> str:
    table = markdown_table(["operation", "p50 ms", "p95 ms", "p99 ms", "n"],
                           [[name, r["p50"], r["p95"], r["p99"], r["n"]] for name, r in record["rows"].items()])
    return "\n".join([
        "# remember latency — embedded store (SQLite), over the sample corpus",
        "",
        table,
        "",
        f"Machine: {machine_line(record['machine'])}",
        f"Command: `{record['command']}`",
    ])


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=200, help="operations per row")
    parser.add_argument("--smoke", action="store_true", help="5 operations per row, output to a temp folder")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    n = 5 if args.smoke else args.n
    with tempfile.TemporaryDirectory(prefix="hippo-remember-") as scratch:
        rows = run(n, Path(scratch))
        record = {"n": n, "rows": rows, "machine": machine_info(),
                  "command": "python benchmarks/remember.py " + " ".join(sys.argv[1:] if argv is None else argv)}
        out = Path(scratch) if args.smoke else args.out
        markdown = render(record)
        json_path, md_path = write_outputs("remember", record, markdown, out)
        print(markdown)
        log(f"wrote {json_path} and {md_path}")
    return record


if __name__ == "__main__":
    main()
