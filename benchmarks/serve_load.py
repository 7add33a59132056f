"""Load: ``memory/recall`` over HTTP against a 10k-passage memory, with 1, 8 and 32 concurrent clients.

The server is ``hippo serve --http`` in its own process on 127.0.0.1 (loopback
only); each client is a thread with its own ``rcp`` SDK client, sending
``memory/recall`` (n=5, k=10) for questions drawn in a fixed order. Every
level is bounded in requests and in seconds; any error response or transport
failure is counted and the run fails unless there are none.

Compared in the same run: the default server (torch at one intra-op thread,
each recall embedding its query alone), the same with torch's default two
threads (``HIPPO_SERVER_TORCH_THREADS=2``, the baseline before the server
pinned it), and with ``HIPPO_SERVER_COALESCE_EMBEDDINGS=true`` (concurrent
queries encoded as one batch, ``hippo.api.rcp.coalesce``).

The memory (cached under ``results/cache/``, built once, ~10-20 min on 2 cores):
every passage of the shared datasets (MuSiQue and HotpotQA tuning corpora, the
four HippoRAG case-study corpora, HippoRAG's sample) plus hippo's own sample
corpus, then generated encyclopedia passages (fictional people, towns,
companies, inventions, each naming three to five others) up to 10,000 passages,
all indexed with spaCy triples and MiniLM vectors. Queries: the datasets'
questions plus generated two-hop questions about the generated passages.

Writes ``results/serve_load.json`` and ``results/serve_load.md``.

    python benchmarks/serve_load.py            # full run, ~5-8 min after the cache exists
    python benchmarks/serve_load.py --smoke    # seconds: sample corpus, 1 and 4 clients, temporary folder
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from benchmarks.common import (CACHE, REPO, RESULTS, log, machine_info, machine_line, markdown_table, offline,
                                   percentiles, progress_printer, write_outputs)
except ImportError:  # run as ``python benchmarks/serve_load.py``
    from common import (CACHE, REPO, RESULTS, log, machine_info, machine_line,  # type: ignore
                        markdown_table, offline, percentiles, progress_printer, write_outputs)

TARGET_PASSAGES = 10_000
SEED = 20240607
SHARED_SETS = ("hipporag_musique_train100", "hipporag_hotpotqa_train100", "hipporag_sample")


# -- the memory ----------------------------------------------------------------------------

_FIRST = ["Ada", "Bram", "Cilla", "Dorian", "Elin", "Fenna", "Gustav", "Hedda", "Ivo", "Jonna", "Kasper", "Liv",
          "Magnus", "Nora", "Oskar", "Pia", "Quentin", "Runa", "Sten", "Tove", "Ulrik", "Vera", "Wim", "Ylva"]
_SYLLABLES = ["bar", "dal", "en", "fjor", "gran", "hol", "is", "kar", "lun", "mor", "ne", "ost", "per", "ran",
              "sol", "tor", "ul", "vik", "wen", "yr"]
_PROFESSIONS = ["engineer", "shipwright", "chemist", "cartographer", "composer", "botanist", "merchant",
                "physician", "architect", "astronomer"]
_PRODUCTS = ["glass lenses", "rope", "salted herring", "telegraph cable", "clock springs", "sailcloth", "dyes",
             "printing presses", "lamp oil", "barometers"]
_KINDS = ["navigation instrument", "signal lamp", "water pump", "loom", "printing method", "diving bell",
          "weather vane", "tide gauge", "seed drill", "kiln"]


def _name(rng: random.Random, used: set[str], parts: int) -> str:
    while True:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()
        if word not in used:
            used.add(word)
            return word


@dataclass
class World:
    """A fictional encyclopedia: every passage names 3-5 other things, so the graph has multi-hop paths."""

    documents: list[dict[str, str]] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)


def generated_world(count: int, seed: int = SEED) -> World:
    rng = random.Random(seed)
    used: set[str] = set()
    wanted, count = count, int(count / 0.89) + 10  # the pools below hold ~0.89 passages per unit
    regions = [f"{_name(rng, used, 3)} Province" for _ in range(max(4, count // 60))]
    towns = [_name(rng, used, 3) + rng.choice(["holm", "by", "stad", "hamn"]) for _ in range(max(8, count // 7))]
    people = [f"{rng.choice(_FIRST)} {_name(rng, used, 4)}" for _ in range(max(8, count // 3))]
    companies = [f"{_name(rng, used, 3)} {rng.choice(['Works', 'Company', 'Foundry', 'Guild'])}"
                 for _ in range(max(8, count // 5))]
    inventions = [f"{_name(rng, used, 3).lower()}-{rng.choice(['lamp', 'gauge', 'press', 'bell', 'loom'])}"
                  for _ in range(max(8, count // 5))]
    town_region = {t: rng.choice(regions) for t in towns}
    town_mayor = {t: rng.choice(people) for t in towns}
    birthplace = {p: rng.choice(towns) for p in people}
    founder = {c: rng.choice(people) for c in companies}
    seat = {c: rng.choice(towns) for c in companies}
    inventor = {i: rng.choice(people) for i in inventions}
    maker = {i: rng.choice(companies) for i in inventions}
    world = World()

    def add(title: str, text: str) -> None:
        if len(world.documents) < wanted:
            world.documents.append({"title": title, "text": text})

    for p in people:
        born = rng.randint(1780, 1950)
        add(p, f"{p} ({born}–{born + rng.randint(40, 90)}) was a {rng.choice(_PROFESSIONS)} born in "
               f"{birthplace[p]}. {p.split()[0]} studied in {rng.choice(towns)} and later worked for the "
               f"{rng.choice(companies)}.")
    for c in companies:
        add(c, f"The {c} was founded in {rng.randint(1800, 1960)} by {founder[c]} in {seat[c]}. It makes "
               f"{rng.choice(_PRODUCTS)} and supplies the {rng.choice(companies)}.")
    for i in inventions:
        add(f"The {i}", f"The {i} is a {rng.choice(_KINDS)} invented by {inventor[i]} in {rng.randint(1820, 1970)}. "
                        f"It was first manufactured by the {maker[i]} in {seat[maker[i]]}.")
    for t in towns:
        add(t, f"{t} is a town in {town_region[t]} known for its {rng.choice(_PRODUCTS)}. Its mayor is "
               f"{town_mayor[t]}, and the {rng.choice(companies)} has a workshop there.")
    for r in regions:
        members = rng.sample(towns, k=min(3, len(towns)))
        add(r, f"{r} is a region whose towns include {', '.join(members)}. Its assembly meets in {members[0]}.")
    for i in rng.sample(inventions, k=min(60, len(inventions))):
        world.questions.append(f"Who founded the company that first manufactured the {i}?")
    for c in rng.sample(companies, k=min(40, len(companies))):
        world.questions.append(f"In which town was the founder of the {c} born?")
    return world


def memory_documents(target: int) -> tuple[list[Any], list[str], dict[str, int]]:
    """Shared datasets, hippo's sample, then generated passages up to ``target`` documents (one passage each)."""
    from hippo.datasets import SAMPLE, corpus_documents, datasets_root, load_dataset, read_json

    documents: list[Any] = []
    questions: list[str] = []
    counts: dict[str, int] = {}
    for name in (*SHARED_SETS, SAMPLE):
        dataset = load_dataset(name)
        documents += dataset.documents
        questions += [q.question for q in dataset.questions]
        counts[dataset.name] = len(dataset.documents)
    for corpus in sorted((datasets_root() / "hipporag_case_study").glob("*_corpus.json")):
        docs = corpus_documents(read_json(corpus), source=corpus.name)
        documents += docs
        counts[corpus.stem] = len(docs)
    world = generated_world(max(0, target - len(documents)))
    documents += world.documents
    questions += world.questions
    counts["generated"] = len(world.documents)
    return documents, questions, counts


MODEL = "all-MiniLM-L6-v2"


def vector_family(backend_name: str) -> str:
    from hippo.store.base import vector_family as family

    return family(backend_name)


def backend() -> str:
    from hippo import Settings

    return Settings().embedding_backend


def model_tag() -> str:
    """Caches of torch's vectors (torch, ONNX fp32) keep their old names; int8's say so."""
    return MODEL if vector_family(backend()) == vector_family("torch") else f"{MODEL}-{backend()}"


def seed_vector_cache(path: Path) -> int:
    """Copy the vectors other benchmarks already computed with the same model into a new store.

    Vectors are keyed by the hash of the text embedded, so indexing finds
    them and encodes only the rest; the graph, extraction and everything
    else is built as usual. Returns the vectors copied.
    """
    import sqlite3
    from contextlib import closing

    from hippo.store import SQLiteStore
    from hippo.store.sqlite_embedding import blob, stored_format, unblob

    SQLiteStore(path).close()  # the schema
    copied = 0
    with sqlite3.connect(path) as db:
        kept = stored_format(db)
        for source in sorted(CACHE.glob(f"hipporag_*-spacy-{model_tag()}.db")):
            with closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as cache:
                meta = dict(cache.execute("SELECT key, value FROM meta").fetchall())
                family = vector_family(meta.get("embedding_backend", "torch"))
                if meta.get("embedding_model") != MODEL or family != vector_family(backend()):
                    continue
                given = stored_format(cache)  # an older cache keeps float32, a new store float16
                rows = [(h, blob(unblob(v, given), kept)) for h, v in cache.execute("SELECT hash, vector FROM vectors")]
            before = db.total_changes
            db.executemany("INSERT OR IGNORE INTO vectors (hash, vector) VALUES (?, ?)", rows)
            copied += db.total_changes - before
            db.commit()
    return copied


def build_cache(path: Path, target: int) -> dict[str, Any]:
    """Index the memory once; later runs find every passage stored and only re-read the questions."""
    from hippo import Memory

    documents, questions, counts = memory_documents(target)
    clock = time.perf_counter()
    if not path.exists():
        log(f"seeded {seed_vector_cache(path)} cached vectors of {MODEL} into {path}")
    with Memory.open(str(path)) as memory:
        stored = memory.stats().passages
        if stored < len(documents):
            log(f"indexing {len(documents)} documents into {path} ({stored} passages already there)")
            memory.index(documents, progress=progress_printer("index"))
        stats = memory.stats()
    return {"path": str(path), "passages": stats.passages, "entities": stats.entities, "facts": stats.facts,
            "documents_by_source": counts, "questions": questions, "build_seconds": round(time.perf_counter() - clock)}


# -- the load ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """``hippo serve --http`` on a loopback port, in its own process."""

    def __init__(self, store: str, env: dict[str, str], startup_timeout: float = 300.0) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/rcp"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hippo.cli", "serve", "--http", f"127.0.0.1:{self.port}", "--store", store],
            cwd=REPO, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        import rcp

        deadline = time.monotonic() + startup_timeout
        while True:
            try:
                rcp.HttpTransport(self.url, timeout=5).call({"jsonrpc": "2.0", "id": 0, "method": "ping"})
                return
            except rcp.RcpError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start: {self.proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.5)

    def rss_mb(self) -> float:
        """The server process's resident set now (Linux ``/proc``)."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return round(int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@dataclass
class Level:
    clients: int
    requests: int
    seconds: float
    latencies_ms: list[float]
    errors: list[str]
    engine_ms: list[float] = field(default_factory=list)  # the engine's own recall time, from _meta.timings

    def row(self) -> dict[str, Any]:
        stats = percentiles(self.latencies_ms, (50, 95, 99))
        engine = percentiles(self.engine_ms, (50, 95))
        return {"clients": self.clients, "requests": self.requests, "errors": len(self.errors),
                "seconds": round(self.seconds, 2), "throughput_rps": round(len(self.latencies_ms) / self.seconds, 2),
                "p50_ms": round(stats["p50"], 1), "p95_ms": round(stats["p95"], 1), "p99_ms": round(stats["p99"], 1),
                "mean_ms": round(stats["mean"], 1), "engine_p50_ms": round(engine["p50"], 1),
                "engine_p95_ms": round(engine["p95"], 1), "first_errors": self.errors[:5]}


def run_level(url: str, memory_id: str, questions: Sequence[str], clients: int, requests: int,
              max_seconds: float) -> Level:
    """``requests`` recalls shared by ``clients`` threads, stopping early after ``max_seconds``."""
    import rcp

    latencies: list[float] = []
    engine: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    issued = iter(range(requests))
    start = time.perf_counter()
    deadline = start + max_seconds
    connected = [rcp.connect_http(url) for _ in range(clients)]  # handshakes outside the clock

    def worker(client: rcp.Client) -> None:
        while time.perf_counter() < deadline:
            with lock:
                i = next(issued, None)
            if i is None:
                return
            clock = time.perf_counter()
            try:
                result = client.memory_recall(questions[i % len(questions)], memory_id=memory_id, n=5)
                if not result.get("clues"):
                    raise ValueError("no clue")
            except Exception as exc:  # noqa: BLE001 - every failure is counted, none stops the run
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                continue
            with lock:
                latencies.append((time.perf_counter() - clock) * 1000)
                engine.append(result.get("_meta", {}).get("timings", {}).get("total", float("nan")) * 1000)

    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(c,)) for c in connected]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return Level(clients=clients, requests=len(latencies) + len(errors), seconds=time.perf_counter() - start,
                 latencies_ms=latencies, errors=errors, engine_ms=engine)


def measure(label: str, store: str, env: dict[str, str], questions: Sequence[str], levels: Sequence[int],
            requests: dict[int, int], max_seconds: float, documents: list[dict] | None = None) -> dict[str, Any]:
    import rcp

    server = ServerProcess(store, env)
    try:
        client = rcp.connect_http(server.url)
        clock = time.perf_counter()
        built = client.memory_build(documents=documents) if documents else client.memory_build(scope="global")
        build_ms = (time.perf_counter() - clock) * 1000
        log(f"[{label}] memory {built['memoryId']}: {built['tokens']} tokens ({build_ms:.0f} ms)")
        run_level(server.url, built["memoryId"], questions, clients=2, requests=10, max_seconds=60)  # warm-up
        rows = []
        for clients in levels:
            level = run_level(server.url, built["memoryId"], questions, clients, requests[clients], max_seconds)
            rows.append(level.row())
            log(f"[{label}] {clients:>2} clients: {rows[-1]['throughput_rps']} req/s, p50 {rows[-1]['p50_ms']} ms, "
                f"p95 {rows[-1]['p95_ms']} ms, {rows[-1]['errors']} errors")
        return {"label": label, "env": env, "memory_id": built["memoryId"], "memory_tokens": built["tokens"],
                "memory_build_ms": round(build_ms), "levels": rows}
    finally:
        server.stop()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=TARGET_PASSAGES)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--requests", type=int, nargs="+", default=[100, 400, 800],
                        help="requests per level (bounded by --max-seconds too)")
    parser.add_argument("--max-seconds", type=float, default=40.0, help="time bound per level")
    parser.add_argument("--no-baseline", action="store_true", help="run the default server only")
    parser.add_argument("--build-only", action="store_true", help="build the cached memory and stop")
    parser.add_argument("--smoke", action="store_true", help="seconds-long check on the sample corpus (for CI)")
    args = parser.parse_args(argv)
    if len(args.requests) != len(args.levels):
        parser.error("--requests needs one count per level")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    offline()
    args = parse_args(argv)
    requests = dict(zip(args.levels, args.requests, strict=True))
    configs = [("default", {})]
    if not args.no_baseline:
        configs += [("torch 2 threads", {"HIPPO_SERVER_TORCH_THREADS": "2"}),
                    ("coalesced", {"HIPPO_SERVER_COALESCE_EMBEDDINGS": "true"})]

    if args.smoke:
        from hippo.datasets import SAMPLE, load_dataset

        sample = load_dataset(SAMPLE)
        out_dir = Path(tempfile.mkdtemp(prefix="serve_load-smoke-"))
        store = str(out_dir / "smoke.db")
        documents = [d.model_dump(include={"title", "text"}) for d in sample.documents[:12]]
        memory = {"path": store, "passages": len(documents), "documents_by_source": {"sample": len(documents)}}
        questions = [q.question for q in sample.questions]
        runs = [measure("default", store, configs[0][1], questions, [1, 4], {1: 8, 4: 16}, 20.0, documents)]
    else:
        out_dir = RESULTS
        path = CACHE / f"serve_load-{args.passages // 1000}k-{model_tag()}.db"
        memory = build_cache(path, args.passages)
        if args.build_only:
            log(json.dumps({k: v for k, v in memory.items() if k != "questions"}))
            return memory
        questions = memory.pop("questions")
        random.Random(SEED).shuffle(questions)
        runs = [measure(label, str(path), env, questions, args.levels, requests, args.max_seconds)
                for label, env in configs]

    info = machine_info()
    record = {"memory": {k: v for k, v in memory.items() if k != "questions"}, "runs": runs, "machine": info,
              "settings": {"levels": args.levels if not args.smoke else [1, 4], "max_seconds": args.max_seconds,
                           "recall": {"n": 5, "k": 10}, "transport": "HTTP/1.1 loopback, one connection per call "
                                                                      "(rcp SDK HttpTransport)"}}
    header = ["server", "clients", "requests", "errors", "req/s", "p50 ms", "p95 ms", "p99 ms",
              "engine p50 ms", "engine p95 ms"]
    rows = [[run["label"], r["clients"], r["requests"], r["errors"], f"{r['throughput_rps']:.1f}",
             r["p50_ms"], r["p95_ms"], r["p99_ms"], r["engine_p50_ms"], r["engine_p95_ms"]]
            for run in runs for r in run["levels"]]
    sources = ", ".join(f"{name} {count}" for name, count in memory["documents_by_source"].items())
    markdown = "\n".join([
        "# RCP server load: memory/recall over HTTP", "",
        f"Memory: {memory['passages']} passages (documents: {sources}); "
        f"{runs[0].get('memory_tokens')} tokens of entities and facts. Server: `hippo serve --http` in its own "
        "process on 127.0.0.1; clients: threads with their own rcp SDK client, memory/recall n=5 k=10. "
        "default = torch at 1 intra-op thread, each query embedded alone; torch 2 threads = torch's own default; "
        "coalesced = default + concurrent query embeddings encoded as one batch. "
        "Latency is the client's (queueing, HTTP and JSON included); engine = the recall's own time as the "
        "server reports it (`_meta.timings.total`). Other processes shared the 2 cores: see the load average.", "",
        markdown_table(header, rows), "", f"Machine: {machine_line(info)}",
    ])
    write_outputs("serve_load", record, markdown, out_dir=out_dir)
    print(markdown)
    failures = sum(r["errors"] for run in runs for r in run["levels"])
    if failures:
        raise SystemExit(f"{failures} requests failed")
    return record


if __name__ == "__main__":
    main()
