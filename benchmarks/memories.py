"""What a built memory costs to save and to find, as the store fills with memories.

``memory/build`` saves a memory record; ``memory/recall`` without a ``memoryId``
looks up the caller's latest one. Before issue 12 one list of every memory id
was rewritten by every build and read, with every record, by every such
recall (``legacy``, kept here as the baseline). Now records are looked up by
key: one per memory and one "latest" pointer per owner (``per-owner``).

For N memories spread over 100 owners, on the same store, it measures:

- ``save`` and ``latest`` latency (p50/p95 over repeated calls) and the
  key-value keys each reads and writes (work counted, not only timed);
- ``memory/recall`` without a ``memoryId``, end to end through the RCP
  handlers (in process, over a 5-document memory so the registry's share shows).

    python benchmarks/memories.py                 # N = 10, 100, 1000, 10000 on SQLite
    python benchmarks/memories.py --store neo4j://127.0.0.1:7687 --sizes 10 10000
    python benchmarks/memories.py --smoke
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
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
except ImportError:  # run as ``python benchmarks/memories.py``
    from common import RESULTS, log, machine_info, machine_line, markdown_table, offline, percentiles, write_outputs  # type: ignore

offline()

import hippo  # noqa: E402
from hippo.datasets import SAMPLE  # noqa: E402
from hippo.embed import SentenceEmbedder  # noqa: E402
from hippo.server import Service  # noqa: E402
from hippo.server.auth import Principal  # noqa: E402
from hippo.server.memories import NAMESPACE, MemoryRecord, MemoryRegistry, latest_key  # noqa: E402
from hippo.store import open_store  # noqa: E402

OWNERS = 100
LEGACY_INDEX = "_index"


class Counting:
    """The store, counting key-value keys read and written (everything else passes through)."""

    def __init__(self, store: Any) -> None:
        self.store, self.read, self.written = store, 0, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def get_values(self, namespace: str, keys: Any) -> dict[str, str]:
        keys = list(keys)
        self.read += len(keys)
        return self.store.get_values(namespace, keys)

    def put_values(self, namespace: str, items: Any) -> None:
        self.written += len(items)
        self.store.put_values(namespace, items)


class LegacyRegistry:
    """The registry before issue 12 (the baseline): one list of every memory id, rewritten by every
    save; ``latest`` reads the list and every record, then keeps the caller's."""

    def __init__(self, store: Any) -> None:
        self._store, self._cache, self._lock = store, {}, threading.Lock()

    def _read(self, ids: list[str]) -> list[MemoryRecord]:
        missing = [i for i in ids if i not in self._cache]
        for key, value in self._store.get_values(NAMESPACE, missing).items() if missing else ():
            self._cache[key] = MemoryRecord.model_validate(json.loads(value))
        return [self._cache[i] for i in ids if i in self._cache]

    def get(self, memory_id: str, ctx: Any) -> MemoryRecord:
        return self._read([memory_id])[0]

    def latest(self, ctx: Any, session_id: str | None = None) -> MemoryRecord | None:
        ids = json.loads(self._store.get_values(NAMESPACE, [LEGACY_INDEX]).get(LEGACY_INDEX, "[]"))
        mine = [r for r in self._read(ids) if r.owner == ctx.owner and r.scope == "global"]
        return max(mine, key=lambda r: r.updated_at) if mine else None

    def save(self, record: MemoryRecord) -> None:
        with self._lock:
            ids = json.loads(self._store.get_values(NAMESPACE, [LEGACY_INDEX]).get(LEGACY_INDEX, "[]"))
            if record.id not in ids:
                ids.append(record.id)
            self._store.put_values(NAMESPACE, {record.id: record.model_dump_json(by_alias=True),
                                               LEGACY_INDEX: json.dumps(ids)})
            self._cache[record.id] = record


def record(i: int, spaces: list[str] | None = None) -> MemoryRecord:
    stamp = f"2026-01-01T00:00:{i // 1_000_000:02d}.{i % 1_000_000:06d}+00:00"
    return MemoryRecord(id=f"mem-{i:012d}", scope="global", spaces=spaces, home="org", owner=f"user-{i % OWNERS}",
                        created_at=stamp, updated_at=stamp)


def populate(store: Any, n: int, kind: str, spaces: list[str] | None) -> None:
    """N memories written in bulk, as N builds would have left them."""
    records = [record(i, spaces) for i in range(n)]
    values = {r.id: r.model_dump_json(by_alias=True) for r in records}
    if kind == "legacy":
        values[LEGACY_INDEX] = json.dumps([r.id for r in records])
    else:
        values.update({latest_key(r.owner): r.id for r in records})  # the last of each owner wins
    items = list(values.items())
    for start in range(0, len(items), 5_000):
        store.put_values(NAMESPACE, dict(items[start : start + 5_000]))


class _Context:
    def __init__(self, owner: str) -> None:
        self.owner = owner


def measure(store: Any, registry_of: Callable[[Any], Any], n: int, repeat: int, service: Service) -> dict[str, Any]:
    counting = Counting(store)
    registry = registry_of(counting)
    ctx = _Context("user-7")
    saves, lookups = [], []
    counting.read = counting.written = 0
    for i in range(repeat):
        start = time.perf_counter()
        registry.save(record(10_000_000 + i))
        saves.append((time.perf_counter() - start) * 1000)
    save_keys = (counting.read / repeat, counting.written / repeat)
    read = 0
    for _ in range(repeat):
        fresh = registry_of(counting)  # no warm cache: what the first request of a new server pays
        before = counting.read
        start = time.perf_counter()
        assert fresh.latest(ctx) is not None
        lookups.append((time.perf_counter() - start) * 1000)
        read += counting.read - before
    latest_keys = read / repeat

    service.memories = registry_of(store)  # one server's registry, warm after the first call
    connection = service.connection(service.context(Principal(id="user-7")), initialized=True)
    recalls = []
    for q in range(repeat):
        start = time.perf_counter()
        reply = connection.handle_message({"jsonrpc": "2.0", "id": q, "method": "memory/recall",
                                           "params": {"query": "Who invented the tide-clock?", "k": 3}})
        recalls.append((time.perf_counter() - start) * 1000)
        assert "result" in reply, reply
    return {"memories": n, "save_ms": percentiles(saves), "latest_ms": percentiles(lookups),
            "save_keys_read": save_keys[0], "save_keys_written": save_keys[1], "latest_keys_read": latest_keys,
            "recall_ms": percentiles(recalls)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))[:5]
    embedder = SentenceEmbedder(hippo.Settings().embedding_model)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for n in args.sizes:
            for kind, registry_of in (("legacy", LegacyRegistry), ("per-owner", MemoryRegistry)):
                url = args.store or str(Path(scratch) / f"{kind}-{n}.db")
                store = open_store(url)
                if args.store:
                    _wipe(store)
                memory = hippo.Memory(store, embedder=embedder)
                memory.index(corpus)
                service = Service(memory)
                populate(store, n, kind, spaces=None)
                log(f"{kind}: {n} memories")
                rows.append({"registry": kind, **measure(store, registry_of, n, args.repeat, service)})
                memory.close()
    return {"machine": machine_info(), "store": "neo4j" if args.store else "sqlite", "owners": OWNERS,
            "repeat": args.repeat, "rows": rows}


def _wipe(store: Any) -> None:
    with store._driver.session() as session:  # noqa: SLF001 - a benchmark's own scratch database
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS").consume()


def report(result: dict[str, Any]) -> str:
    def ms(value: float) -> str:
        return f"{value:.2f}" if value < 10 else f"{value:,.0f}"

    rows = [[f"{r['memories']:,}", r["registry"], ms(r["save_ms"]["p50"]), ms(r["save_ms"]["p95"]),
             f"{r['save_keys_read']:g}", f"{r['save_keys_written']:g}", ms(r["latest_ms"]["p50"]),
             ms(r["latest_ms"]["p95"]), f"{r['latest_keys_read']:,.0f}", ms(r["recall_ms"]["p50"]),
             ms(r["recall_ms"]["p95"])] for r in result["rows"]]
    table = markdown_table(["memories", "registry", "save p50 ms", "save p95 ms", "keys read / save",
                            "keys written / save", "latest p50 ms", "latest p95 ms", "keys read / latest",
                            "memory/recall p50 ms", "memory/recall p95 ms"], rows)
    return (f"# Built memories: save and find, by how many the store holds\n\n"
            f"Store: {result['store']}; {result['owners']} owners; {result['repeat']} calls each; `latest` on a "
            f"cold registry (the first request of a new server). `memory/recall` without `memoryId` over a "
            f"5-document memory, in process through the RCP handlers, one warm registry.\n\n{table}\n\n"
            f"{machine_line(result['machine'])}\n")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--store", help="a neo4j:// URL (its database is wiped); default: scratch SQLite files")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, output to a scratch folder")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.smoke:
        args.sizes, args.repeat = [10, 50], 3
    result = run(args)
    markdown = report(result)
    print(markdown)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) if args.smoke else args.out
        stem = "memories" if result["store"] == "sqlite" else "memories-neo4j"
        for path in write_outputs(stem, result, markdown, out):
            log(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
