"""Store-side reads (``HIPPO_NEO4J_READ=store``) against in-process recall, on the same Neo4j.

Two measurements, each writing its rows into ``results/store_read.json`` (one
entry per run name, kept across runs) and the whole file as
``results/store_read.md``:

- ``quality``: a QA set bulk-loaded into Neo4j (``hippo neo4j import``), every
  question recalled three ways from the same database: in process (the default
  solver: exact PPR on small graphs), in process with the local push (the solver
  store mode runs), and store-side. Top-10 overlap of the hits (store vs
  in-process), R@2/R@5 of each, the dense and BM25 baselines beside them, and
  store-side round trips per recall.
- ``speed``: a synthetic scale store bulk-loaded into Neo4j (``--size``, the
  stores of ``benchmarks/scale.py``), each mode in a fresh process: open time,
  RSS after opening and after the recalls, recall p50/p95 without the query
  embedding, round trips per recall; with ``--server-pid`` (a Neo4j on this machine)
  the CPU a recall takes in the client and in Neo4j; with ``--replay N`` too, where Neo4j's goes:
  after the recalls, up to N of each statement they ran are run again one at a time with the
  same parameters, and each one's Neo4j CPU, client CPU and wall time per call are recorded.

    python benchmarks/store_read.py quality --dataset hipporag_musique_train100 --store bolt://127.0.0.1:7722
    python benchmarks/store_read.py speed --size 100000 --store bolt://127.0.0.1:7732 [--server-pid PID]
    python benchmarks/store_read.py serve --dataset hipporag_musique_train100 --store bolt://127.0.0.1:7722

- ``serve``: N ``hippo serve --http`` processes over the one Neo4j (a QA set loaded as for
  ``quality``), clients spread over them evenly, ``memory/recall`` of the set's questions:
  req/s and latency for 1 and 2 processes, in each read mode.
- ``writes``: each mode in a fresh process over a loaded store: open, remembers one at a time, a
  forget and a restore; latencies, RSS, and whether the process built the derived state; then
  dry-run forgets of random documents in both modes, whose answers must be identical.
- ``clues``: clue-guided recall (``expand=True``) of a loaded QA set in process (local push) and
  store-side: how many questions get the same clues and hits, R@5 and what the clue step costs.
- ``visible``: a writer process remembers; a store-side reader in this process recalls until it
  finds each write: the lag from commit to found.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # also when run as a script

from benchmarks.common import RESULTS, log, machine_info, machine_line, markdown_table, percentiles  # noqa: E402

OUT = RESULTS / "store_read.json"
HITS = 10


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def _latency(result: Any) -> float:
    return 1000 * (result.timings.get("total", 0.0) - result.timings.get("embed", 0.0))


def _round_trips(memory: Any) -> int:
    reads = memory.store_reads
    return reads.round_trips if reads is not None else 0


# -- quality ---------------------------------------------------------------------------


def _questions(dataset_name: str, limit: int | None) -> tuple[Any, list[Any], Any]:
    """The set, its first ``limit`` questions and an embedder that embeds each text once for every mode."""
    import hippo
    from benchmarks.quality import CachedEmbedder
    from hippo.datasets import load_dataset
    from hippo.embed import open_embedder

    root = Path(os.environ.get("HIPPO_DATASETS", RESULTS.parent.parent / "shared" / "datasets"))
    dataset = load_dataset(root / dataset_name)
    questions = dataset.questions[:limit] if limit else dataset.questions
    return dataset, questions, CachedEmbedder(open_embedder(hippo.Settings()))


def _open(store: str, modes: dict[str, dict[str, Any]], embedder: Any) -> dict[str, tuple[Any, float]]:
    """Each mode (its settings) opened on the one database: (memory, seconds to open)."""
    import hippo
    from hippo.store.neo4j import Neo4jStore

    opened = {}
    for name, extra in modes.items():
        clock = time.perf_counter()
        opened[name] = (hippo.Memory(Neo4jStore.from_url(store), settings=hippo.Settings(**extra), embedder=embedder),
                        time.perf_counter() - clock)
    return opened


def quality(dataset_name: str, store: str, limit: int | None) -> dict[str, Any]:
    from hippo.evaluation import recall_at

    dataset, questions, embedder = _questions(dataset_name, limit)
    modes = {"memory": {}, "memory-push": {"ppr_solver": "push"}, "store": {"neo4j_read": "store"}}
    opened = _open(store, modes, embedder)
    hits: dict[str, list[list[str]]] = {name: [] for name in modes}
    recall: dict[str, dict[int, list[float]]] = {name: {2: [], 5: []} for name in [*modes, "dense", "bm25"]}
    latency: dict[str, list[float]] = {name: [] for name in modes}
    trips = []
    for i, q in enumerate(questions):
        gold = dataset.gold_document_ids(q)
        embedder.encode([q.question])
        for name, (memory, _) in opened.items():
            before = _round_trips(memory)
            result = memory.recall(q.question, n=5, k=HITS)
            latency[name].append(_latency(result))
            if name == "store":
                trips.append(_round_trips(memory) - before)
            hits[name].append([h.id for h in result.hits])
            for k in (2, 5):
                recall[name][k].append(recall_at(result.hits, gold, k))
        for mode in ("dense", "bm25"):
            found = opened["memory"][0].retrieve(q.question, k=HITS, mode=mode)
            for k in (2, 5):
                recall[mode][k].append(recall_at(found, gold, k))
        if i % 20 == 0:
            log(f"{dataset_name}: {i + 1}/{len(questions)}")

    def overlap(a: str, b: str) -> float:
        return float(np.mean([len(set(x) & set(y)) / max(1, len(x)) for x, y in zip(hits[a], hits[b], strict=True)]))

    row = {
        "run": f"quality {dataset_name}", "dataset": dataset_name, "questions": len(questions),
        "counts": opened["memory"][0].stats().model_dump(include={"documents", "passages", "entities", "facts"}),
        "overlap_at_10": {"store_vs_memory": overlap("store", "memory"),
                          "store_vs_memory_push": overlap("store", "memory-push"),
                          "memory_push_vs_memory": overlap("memory-push", "memory")},
        "identical_top10": sum(a == b for a, b in zip(hits["store"], hits["memory"], strict=True)),
        "recall": {name: {f"R@{k}": 100 * float(np.mean(v)) for k, v in by_k.items()} for name, by_k in recall.items()},
        "latency_ms": {name: percentiles(v) for name, v in latency.items()},
        "round_trips": percentiles(trips), "open_s": {name: round(s, 2) for name, (_, s) in opened.items()},
        "machine": machine_info(),
    }
    for memory, _ in opened.values():
        memory.close()
    return row


def clues(dataset_name: str, store: str, limit: int | None) -> dict[str, Any]:
    """Clue-guided recall (``expand=True``, offline clue sources) in process (local push) and store-side
    on one database: how often the clues and hits are the same, and what each costs."""
    from hippo.evaluation import recall_at

    dataset, questions, embedder = _questions(dataset_name, limit)
    opened = _open(store, {"memory": {"ppr_solver": "push"}, "store": {"neo4j_read": "store"}}, embedder)
    same = {"plain clues": 0, "clues": 0, "clues where plain clues are": 0, "hits": 0}
    recall: dict[str, list[float]] = {}
    took: dict[str, list[float]] = {}
    overlaps = []
    for i, q in enumerate(questions):
        gold = dataset.gold_document_ids(q)
        embedder.encode([q.question])
        plain, guided = {}, {}
        for name, (memory, _) in opened.items():
            plain[name] = [(c.query, c.kind) for c in memory.recall(q.question, n=8, k=HITS).clues]
            result = memory.recall(q.question, n=8, k=HITS, expand=True)
            guided[name] = result
            recall.setdefault(f"{name} R@5", []).append(recall_at(result.hits, gold, 5))
            took.setdefault(f"{name} recall", []).append(_latency(result))
            took.setdefault(f"{name} clue step", []).append(1000 * result.timings.get("clues", 0.0))
        a, b = ([(c.query, c.kind, c.grounded, c.passage_ids) for c in guided[m].clues] for m in opened)
        same["plain clues"] += plain["memory"] == plain["store"]
        same["clues"] += a == b
        same["clues where plain clues are"] += a == b and plain["memory"] == plain["store"]
        x, y = ([h.id for h in guided[m].hits] for m in opened)
        same["hits"] += x == y
        overlaps.append(len(set(x) & set(y)) / max(1, len(x)))
        if i % 20 == 0:
            log(f"{dataset_name} clues: {i + 1}/{len(questions)}")
    row = {"run": f"clues {dataset_name}", "dataset": dataset_name, "questions": len(questions), "identical": same,
           "overlap_at_10": float(np.mean(overlaps)),
           "recall": {k: 100 * float(np.mean(v)) for k, v in recall.items()},
           "latency_ms": {k: percentiles(v) for k, v in took.items()},
           "derived_state_built": opened["store"][0].engine.loaded, "machine": machine_info()}
    for memory, _ in opened.values():
        memory.close()
    return row


# -- speed ----------------------------------------------------------------------------


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process on this machine (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def speed_child(size: int, store: str, mode: str, queries: int, warm: int = 10,
                server_pid: int | None = None, replay: int = 0) -> dict[str, Any]:
    """One mode, in this (fresh) process: open, warm up (``warm`` recalls: a long-running server's
    caches), recall ``queries`` synthetic questions. ``server_pid``: a Neo4j on this machine, whose
    CPU time over the recalls is recorded beside this process's."""
    import hippo
    from benchmarks.synthetic import (
        SyntheticCorpus,
        SyntheticEmbedder,
        SyntheticExtractor,
        query_phrases,
    )
    from hippo.extract.spacy import load_pipeline
    from hippo.store.neo4j import Neo4jStore

    load_pipeline()
    rss_before = _rss_mb()
    clock = time.perf_counter()
    memory = hippo.Memory(Neo4jStore.from_url(store), settings=hippo.Settings(neo4j_read=mode),
                          embedder=SyntheticEmbedder(), extractor=SyntheticExtractor())
    open_s = time.perf_counter() - clock
    rss_open = _rss_mb()
    memory._recaller._phrases = query_phrases
    corpus = SyntheticCorpus(size)
    rng = np.random.default_rng(size)
    asked = [corpus.query(int(i)) for i in rng.integers(size, size=queries + warm)]
    for q in asked[:warm]:
        memory.recall(q)
    statements_before = memory.store_reads.statements() if memory.store_reads is not None else {}
    ran = _recording(memory.store.db) if replay and server_pid and mode == "store" else None
    took, cpu, trips, stages = [], [], [], {"seeds": [], "ppr": [], "readout": []}
    server_cpu, clock = (_cpu_seconds(server_pid) if server_pid else 0.0), time.perf_counter()
    for q in asked[warm:]:
        before, c = _round_trips(memory), time.process_time()
        result = memory.recall(q, n=5, k=HITS)
        cpu.append(1000 * (time.process_time() - c))
        took.append(_latency(result))
        trips.append(_round_trips(memory) - before)
        for key, values in stages.items():
            values.append(1000 * result.timings.get(key, 0.0))
    spent = {"wall": time.perf_counter() - clock, "client": sum(cpu) / 1000}
    if server_pid:
        spent["server"] = _cpu_seconds(server_pid) - server_cpu
    row = {"mode": mode, "open_s": round(open_s, 3), "rss_mb_before_open": rss_before, "rss_mb_open": rss_open,
           "rss_mb_after": _rss_mb(), "recall_ms": percentiles(took), "recall_cpu_ms": percentiles(cpu),
           "stages_p50_ms": {k: float(np.median(v)) for k, v in stages.items()},
           "round_trips": percentiles(trips), "load_average": [round(x, 2) for x in os.getloadavg()],
           "mean_ms_per_recall": {k: round(1000 * v / queries, 1) for k, v in spent.items()}}
    if memory.store_reads is not None:
        row["statements"] = _per_recall(statements_before, memory.store_reads.statements(), queries)
    if ran is not None:
        row["replayed"] = _replayed(memory.store.db, ran, queries, replay, server_pid)
    memory.close()
    return row


def _recording(db: Any) -> dict[str, list[dict[str, Any]]]:
    """Each read statement ``db`` runs from now on, by name: its parameters (this connection only)."""
    ran: dict[str, list[dict[str, Any]]] = {}
    read = db.read

    def recorded(name: str, doing: str, **params: Any) -> list[Any]:
        ran.setdefault(name, []).append(params)
        return read(name, doing, **params)

    db.read = recorded
    return ran


def _replayed(db: Any, ran: dict[str, list[dict[str, Any]]], recalls: int, most: int,
              server_pid: int) -> dict[str, dict[str, float]]:
    """Up to ``most`` of each statement ``ran`` recorded, run again one at a time on a quiet server:
    per call, Neo4j's CPU, this process's and the wall time (ms); ``calls`` per recall. Neo4j's CPU is
    read from /proc in clock ticks (10 ms): over ``most`` calls, to 10 / ``most`` ms a call."""
    del db.read  # the connection's own again
    rows = {}
    for name, calls in ran.items():
        sample = calls[:most]
        server, client, clock = _cpu_seconds(server_pid), time.process_time(), time.perf_counter()
        for params in sample:
            db.read(name, "replaying", **params)
        rows[name] = {"calls": round(len(calls) / recalls, 2),
                      "server_ms": round(1000 * (_cpu_seconds(server_pid) - server) / len(sample), 2),
                      "client_ms": round(1000 * (time.process_time() - client) / len(sample), 2),
                      "wall_ms": round(1000 * (time.perf_counter() - clock) / len(sample), 2)}
    return dict(sorted(rows.items(), key=lambda kv: -kv[1]["calls"] * kv[1]["server_ms"]))


def _per_recall(before: dict[str, tuple[int, float]], after: dict[str, tuple[int, float]],
                recalls: int) -> dict[str, dict[str, float]]:
    """Per statement: calls and milliseconds waited per recall, most waited first."""
    rows = {}
    for name, (calls, spent) in after.items():
        was_calls, was_spent = before.get(name, (0, 0.0))
        rows[name] = {"calls": round((calls - was_calls) / recalls, 2),
                      "ms": round(1000 * (spent - was_spent) / recalls, 1)}
    return dict(sorted(rows.items(), key=lambda kv: -kv[1]["ms"]))


def by_fresh_process(command: str, modes: Sequence[str], *args: str) -> dict[str, dict[str, Any]]:
    """Each read mode measured by ``command`` in a process of its own (this script, a ``*-child``
    command that prints its row as JSON), so no mode inherits another's memory or caches."""
    rows = {}
    for mode in modes:
        log(f"{command}: {mode} mode")
        out = subprocess.run([sys.executable, __file__, command, "--mode", mode, *args], capture_output=True,
                             text=True, check=False)
        if out.returncode:
            raise SystemExit(f"{mode} mode failed:\n{out.stderr[-3000:]}")
        rows[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    return rows


def speed(size: int, store: str, queries: int, modes: Sequence[str], warm: int = 10,
          server_pid: int | None = None, replay: int = 0) -> dict[str, Any]:
    by_mode = by_fresh_process("speed-child", modes, "--size", str(size), "--store", store, "--queries", str(queries),
                               "--warm", str(warm), "--replay", str(replay),
                               *(["--server-pid", str(server_pid)] if server_pid else []))
    ratio = None
    if {"memory", "store"} <= by_mode.keys():
        ratio = by_mode["store"]["recall_ms"]["p50"] / by_mode["memory"]["recall_ms"]["p50"]
    return {"run": f"speed {size}" + (f" after {warm}" if warm != 10 else ""), "passages": size, "modes": by_mode,
            "store_over_memory_p50": ratio, "queries": queries, "warm": warm, "machine": machine_info()}


# -- write to visible --------------------------------------------------------------------

WRITER = """
import sys, time
from hippo import Memory, Settings
with Memory.open(sys.argv[1], settings=Settings(neo4j_read="store")) as memory:
    for i, _ in enumerate(sys.stdin):  # one write per line asked, so no write waits behind another
        memory.remember(f"Vellurast harbour note {i}: the {sys.argv[2]}q{i}zz beacon was relit.")
        print(i, time.time(), flush=True)
"""


def visible(store: str, writes: int, patience: float = 30.0) -> dict[str, Any]:
    """A writer process remembers; this process, in store mode, recalls until it sees each write
    (among the top 10; a write not found within ``patience`` seconds counts as missed)."""
    import hippo
    from hippo.embed import open_embedder
    from hippo.store.neo4j import Neo4jStore

    reader = hippo.Memory(Neo4jStore.from_url(store), settings=hippo.Settings(neo4j_read="store"),
                          embedder=open_embedder(hippo.Settings()))
    tag = f"x{os.getpid()}"  # words no earlier run wrote
    writer = subprocess.Popen([sys.executable, "-c", WRITER, store, tag], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    lags, recalls, missed, first = [], [], 0, 0
    assert writer.stdin is not None and writer.stdout is not None
    for _ in range(writes):
        writer.stdin.write("write\n")
        writer.stdin.flush()
        i, committed = writer.stdout.readline().split()
        word = f"{tag}q{i}zz"
        for attempt in itertools.count():
            start = time.time()
            hits = reader.recall(f"Which beacon is {word}?", k=10).hits
            recalls.append(1000 * (time.time() - start))
            if any(word in h.text for h in hits):
                lags.append(1000 * (time.time() - float(committed)))
                first += attempt == 0
                break
            if time.time() - float(committed) > patience:
                missed += 1
                break
    writer.stdin.close()
    writer.wait()
    reader.close()
    return {"run": "visible", "writes": writes, "missed": missed, "found_by_first_recall": first,
            "write_to_visible_ms": percentiles(lags), "recall_ms": percentiles(recalls), "machine": machine_info()}


# -- writes without a copy of the graph ------------------------------------------------------

NOTE = "Vellurast harbour note {i}: Marit Olsen relit the {tag} beacon at Kessing Point for the ferry guild."


def writes_child(store: str, mode: str, writes: int) -> dict[str, Any]:
    """One mode, in this (fresh) process: open, then ``writes`` remembers one at a time, a forget and
    a restore of the first two; each one's latency, and the RSS and derived state they leave."""
    import hippo
    from hippo.embed import open_embedder
    from hippo.extract.spacy import load_pipeline
    from hippo.store.neo4j import Neo4jStore

    embedder = open_embedder(hippo.Settings())
    embedder.encode(["warm up the encoder"])
    load_pipeline()  # the models' memory is in the RSS before open: what follows is the graph's and the writes'
    rss_before = _rss_mb()
    clock = time.perf_counter()
    memory = hippo.Memory(Neo4jStore.from_url(store), settings=hippo.Settings(neo4j_read=mode), embedder=embedder)
    open_s = time.perf_counter() - clock
    rss_open = _rss_mb()
    tag, took, uids = f"x{os.getpid()}", [], []
    for i in range(writes):
        clock = time.perf_counter()
        uids.append(memory.remember(NOTE.format(i=i, tag=tag), space="user:bench").uid)
        took.append(1000 * (time.perf_counter() - clock))
    for uid in uids[:2]:  # the second of each is the one reported: the first pays the server's query planning
        clock = time.perf_counter()
        forgotten = memory.forget(uid)
        forget_ms = 1000 * (time.perf_counter() - clock)
        clock = time.perf_counter()
        memory.restore(uid)
        restore_ms = 1000 * (time.perf_counter() - clock)
    row = {"mode": mode, "open_s": round(open_s, 3), "rss_mb_before_open": rss_before, "rss_mb_open": rss_open,
           "rss_mb_after": _rss_mb(), "first_remember_ms": round(took[0], 1), "remember_ms": percentiles(took[1:]),
           "forget_ms": round(forget_ms, 1), "restore_ms": round(restore_ms, 1),
           "forget_entities": len(forgotten.entities), "derived_state_built": memory.engine.loaded,
           "load_average": [round(x, 2) for x in os.getloadavg()]}
    memory.close()
    return row


def forget_parity(store: str, documents: int, seed: int = 7) -> dict[str, Any]:
    """Dry-run forgets of ``documents`` random stored documents, as a reader of every space and as an
    ``org`` reader, answered in each read mode: how many answers are identical, and their cost."""
    import random

    import hippo
    from hippo.embed import open_embedder
    from hippo.store.neo4j import Neo4jStore

    embedder = open_embedder(hippo.Settings())
    opened = {mode: hippo.Memory(Neo4jStore.from_url(store), settings=hippo.Settings(neo4j_read=mode),
                                 embedder=embedder) for mode in ("memory", "store")}
    ids = [d.id for d in opened["memory"].store.find_documents(live=True, limit=1_000_000)]
    picked = random.Random(seed).sample(ids, min(documents, len(ids)))
    answers: dict[str, list[Any]] = {mode: [] for mode in opened}
    took: dict[str, list[float]] = {mode: [] for mode in opened}
    for uid in picked:
        for spaces in (None, ["org"]):
            for mode, memory in opened.items():
                clock = time.perf_counter()
                answers[mode].append(memory.forget(uid, dry_run=True, spaces=spaces).model_dump())
                took[mode].append(1000 * (time.perf_counter() - clock))
    for memory in opened.values():
        memory.close()
    return {"documents": len(picked), "answers": len(answers["store"]),
            "identical": sum(a == b for a, b in zip(answers["memory"], answers["store"], strict=True)),
            "with_synonyms_leaving": sum(a["edges"]["synonym"] > 0 for a in answers["memory"]),
            "ms": {mode: percentiles(v) for mode, v in took.items()}}


def writes_run(store: str, writes: int, modes: Sequence[str]) -> dict[str, Any]:
    by_mode = by_fresh_process("writes-child", modes, "--store", store, "--writes", str(writes))
    import hippo
    from hippo.store.neo4j import Neo4jStore

    opened = Neo4jStore.from_url(store)
    try:
        counts = opened.counts()
    finally:
        opened.close()
    log("writes: dry-run forgets in both modes")
    return {"run": "writes", "writes": writes, "store_counts": counts, "modes": by_mode,
            "forget_parity": forget_parity(store, 200), "hippo": hippo.__version__, "machine": machine_info()}


# -- several servers over one Neo4j --------------------------------------------------------


def serve(dataset_name: str, store: str, processes: Sequence[int], modes: Sequence[str], clients: int,
          requests: int, max_seconds: float) -> dict[str, Any]:
    """req/s of ``clients`` concurrent recalls spread over N server processes, for each N and mode."""
    from concurrent.futures import ThreadPoolExecutor

    import rcp

    from benchmarks.serve_load import ServerProcess, run_level
    from hippo.datasets import load_dataset

    root = Path(os.environ.get("HIPPO_DATASETS", RESULTS.parent.parent / "shared" / "datasets"))
    questions = [q.question for q in load_dataset(root / dataset_name).questions]
    rows = []
    for mode in modes:
        for count in processes:
            env = {"HIPPO_NEO4J_READ": mode, "HF_HUB_OFFLINE": "1"}
            clock = time.perf_counter()
            servers = [ServerProcess(store, env) for _ in range(count)]
            started = time.perf_counter() - clock
            try:
                clock = time.perf_counter()
                memory_ids = [rcp.connect_http(s.url).memory_build(scope="global")["memoryId"] for s in servers]
                build = (time.perf_counter() - clock) / count
                rss_built = [s.rss_mb() for s in servers]
                for server, memory_id in zip(servers, memory_ids, strict=True):  # warm every process
                    run_level(server.url, memory_id, questions, clients=2, requests=10, max_seconds=60)
                share = [clients // count + (i < clients % count) for i in range(count)]
                clock = time.perf_counter()
                with ThreadPoolExecutor(count) as pool:  # each server's clients at once
                    levels = list(pool.map(lambda i: run_level(
                        servers[i].url, memory_ids[i], questions[i::count], share[i],
                        requests * share[i] // clients, max_seconds), range(count)))
                wall = time.perf_counter() - clock
                rss = [s.rss_mb() for s in servers]
            finally:
                for server in servers:
                    server.stop()
            latencies = [x for level in levels for x in level.latencies_ms]
            errors = [e for level in levels for e in level.errors]
            rows.append({"mode": mode, "processes": count, "clients": clients, "requests": len(latencies),
                         "errors": len(errors), "first_errors": errors[:3], "req_s": round(len(latencies) / wall, 2),
                         "latency_ms": percentiles(latencies), "start_s": round(started, 1),
                         "build_s": round(build, 2), "rss_mb_built": rss_built, "rss_mb_after": rss,
                         "load_average": [round(x, 2) for x in os.getloadavg()]})
            log(f"{mode}, {count} process(es): {rows[-1]['req_s']} req/s, p50 {rows[-1]['latency_ms']['p50']:.0f} ms, "
                f"{len(errors)} errors")
    return {"run": f"serve {dataset_name}", "dataset": dataset_name, "rows": rows, "machine": machine_info()}


# -- output ---------------------------------------------------------------------------


def _per_process(values: list[float] | None) -> str:
    return " / ".join(map(str, values)) if values else "–"


def render(runs: dict[str, Any]) -> str:
    parts = ["# Store-side reads against in-process recall", "",
             "`python benchmarks/store_read.py` (see its docstring). Same Neo4j database for both modes.", ""]
    quality_rows = [r for r in runs.values() if r["run"].startswith("quality")]
    if quality_rows:
        header = ["set", "q", "overlap@10 store/mem", "store/mem-push", "R@2 mem", "R@2 store", "R@5 mem",
                  "R@5 mem-push", "R@5 store", "R@5 dense", "R@5 bm25", "store p50 ms", "mem p50 ms",
                  "round trips p50", "load"]
        parts += ["## Quality", "", markdown_table(header, [[
            r["dataset"], r["questions"], f"{r['overlap_at_10']['store_vs_memory']:.3f}",
            f"{r['overlap_at_10']['store_vs_memory_push']:.3f}", r["recall"]["memory"]["R@2"],
            r["recall"]["store"]["R@2"], r["recall"]["memory"]["R@5"], r["recall"]["memory-push"]["R@5"],
            r["recall"]["store"]["R@5"], r["recall"]["dense"]["R@5"], r["recall"]["bm25"]["R@5"],
            r["latency_ms"]["store"]["p50"], r["latency_ms"]["memory"]["p50"], r["round_trips"]["p50"],
            ", ".join(f"{x:.1f}" for x in r["machine"]["load_average"])] for r in quality_rows]), ""]
    clue_rows = [r for r in runs.values() if r["run"].startswith("clues")]
    if clue_rows:
        header = ["set", "q", "plain clues identical", "guided clues identical (of those)", "guided hits identical",
                  "overlap@10", "R@5 mem / store", "clue step p50 mem / store ms", "guided recall p50 mem / store ms",
                  "store built the graph", "load"]
        parts += ["## Clue-guided recall (`expand=True`) in each mode", "", markdown_table(header, [[
            r["dataset"], r["questions"], r["identical"]["plain clues"],
            f"{r['identical']['clues']} ({r['identical']['clues where plain clues are']})", r["identical"]["hits"],
            f"{r['overlap_at_10']:.3f}", f"{r['recall']['memory R@5']:.1f} / {r['recall']['store R@5']:.1f}",
            f"{r['latency_ms']['memory clue step']['p50']:.0f} / {r['latency_ms']['store clue step']['p50']:.0f}",
            f"{r['latency_ms']['memory recall']['p50']:.0f} / {r['latency_ms']['store recall']['p50']:.0f}",
            r["derived_state_built"], ", ".join(f"{x:.1f}" for x in r["machine"]["load_average"])]
            for r in clue_rows]), ""]
    speed_rows = [r for r in runs.values() if r["run"].startswith("speed")]
    if speed_rows:
        header = ["passages", "warm-up recalls", "mode", "open s", "RSS after open MB", "RSS after recalls MB",
                  "recall p50 ms", "p95 ms", "cpu p50 ms", "round trips p50", "load"]
        parts += ["## Speed (recall without query embedding)", "", markdown_table(header, [[
            r["passages"], r.get("warm", 10), m["mode"], m["open_s"], m["rss_mb_open"], m["rss_mb_after"],
            m["recall_ms"]["p50"], m["recall_ms"]["p95"], m["recall_cpu_ms"]["p50"], m["round_trips"]["p50"],
            ", ".join(f"{x:.1f}" for x in m["load_average"])] for r in speed_rows for m in r["modes"].values()]), ""]
        parts += [f"store p50 / in-process p50 at {r['passages']} after {r.get('warm', 10)} recalls: "
                  f"{r['store_over_memory_p50']:.2f}"
                  for r in speed_rows if r["store_over_memory_p50"]] + [""]
        spent = [(r, m) for r in speed_rows for m in r["modes"].values() if "server" in m.get("mean_ms_per_recall", {})]
        if spent:
            parts += ["CPU a recall takes, mean, on this machine (the client and Neo4j share its cores: a recall "
                      "takes at least their sum over the cores in wall time):", "",
                      markdown_table(["passages", "warm-up recalls", "mode", "wall ms", "client CPU ms",
                                      "Neo4j CPU ms", "cores busy"],
                                     [[r["passages"], r.get("warm", 10), m["mode"], t["wall"], t["client"], t["server"],
                                       f"{(t['client'] + t['server']) / t['wall']:.2f}"]
                                      for r, m in spent for t in [m["mean_ms_per_recall"]]]), ""]
        for r in speed_rows:
            statements = r["modes"].get("store", {}).get("statements")
            if statements:
                parts += [f"Where a store-side recall waits at {r['passages']} passages after {r.get('warm', 10)} "
                          "recalls (per recall, mean; the "
                          "reads started ahead overlap, so the milliseconds add up to more than a recall takes):", "",
                          markdown_table(["statement", "calls", "ms waited"],
                                         [[name, v["calls"], v["ms"]] for name, v in statements.items()]), ""]
            replayed = r["modes"].get("store", {}).get("replayed")
            if replayed:
                parts += [f"Where Neo4j's CPU goes at {r['passages']} passages: the statements of those recalls run "
                          "again one at a time with the same parameters (`--replay`), per call and per recall:", "",
                          markdown_table(["statement", "calls a recall", "Neo4j CPU ms a call", "client CPU ms a call",
                                          "wall ms a call", "Neo4j CPU ms a recall", "client CPU ms a recall"],
                                         [[name, v["calls"], v["server_ms"], v["client_ms"], v["wall_ms"],
                                           round(v["calls"] * v["server_ms"], 1), round(v["calls"] * v["client_ms"], 1)]
                                          for name, v in replayed.items()]
                                         + [["all", round(sum(v["calls"] for v in replayed.values()), 2), "", "", "",
                                             round(sum(v["calls"] * v["server_ms"] for v in replayed.values()), 1),
                                             round(sum(v["calls"] * v["client_ms"] for v in replayed.values()), 1)]]),
                          ""]
    serve_rows = [r for r in runs.values() if r["run"].startswith("serve")]
    if serve_rows:
        header = ["set", "read mode", "server processes", "clients", "req/s", "p50 ms", "p95 ms", "errors",
                  "start s", "memory/build s", "RSS MB after build", "RSS MB after load", "load"]
        parts += ["## Several `hippo serve` processes over one Neo4j", "", markdown_table(header, [[
            r["dataset"], m["mode"], m["processes"], m["clients"], m["req_s"], m["latency_ms"]["p50"],
            m["latency_ms"]["p95"], m["errors"], m["start_s"], m.get("build_s", "–"),
            _per_process(m.get("rss_mb_built")), _per_process(m.get("rss_mb_after")),
            ", ".join(f"{x:.1f}" for x in m["load_average"])] for r in serve_rows for m in r["rows"]]), ""]
    if "writes" in runs:
        r = runs["writes"]
        header = ["mode", "open s", "RSS before open MB", "RSS after open MB", "first remember ms",
                  "remember p50 ms", "p95 ms", "forget ms", "restore ms", "RSS after MB", "derived state built", "load"]
        counts = ", ".join(f"{v:,} {k}" for k, v in r["store_counts"].items())
        parts += ["## Writes in each read mode", "", f"A fresh process per mode over a store of {counts}: "
                  f"{r['writes']} remembers one at a time (p50/p95 of all but the first), then a forget and a "
                  "restore of the first two (the second's times).", "",
                  markdown_table(header, [[
                      m["mode"], m["open_s"], m["rss_mb_before_open"], m["rss_mb_open"], m["first_remember_ms"],
                      m["remember_ms"]["p50"],
                      m["remember_ms"]["p95"], m["forget_ms"], m["restore_ms"], m["rss_mb_after"],
                      m["derived_state_built"], ", ".join(f"{x:.1f}" for x in m["load_average"])]
                      for m in r["modes"].values()]), ""]
        f = r.get("forget_parity")
        if f:
            parts += [f"Dry-run forgets of {f['documents']} random documents, as a reader of every space and as an "
                      f"`org` reader, in both modes: {f['identical']} of {f['answers']} answers identical "
                      f"({f['with_synonyms_leaving']} take synonym edges out); p50 {f['ms']['store']['p50']:.0f} ms "
                      f"store-side, {f['ms']['memory']['p50']:.0f} ms in process.", ""]
    if "visible" in runs:
        r = runs["visible"]
        line = (f"{r['writes']} remembers by a writer process, one at a time; the reader recalls until it finds "
                f"each among its top 10: {r.get('found_by_first_recall', '?')} found by the first recall after the "
                f"commit, {r.get('missed', 0)} not within 30 s; "
                f"write-to-visible p50 {r['write_to_visible_ms']['p50']:.0f} ms, p95 "
                f"{r['write_to_visible_ms']['p95']:.0f} ms (one recall: p50 {r['recall_ms']['p50']:.0f} ms).")
        parts += ["## A write in one process, visible to a store-side recall in another", "", line, ""]
    machines = {machine_line(r["machine"]) for r in runs.values()}
    parts += ["Machines: " + "; ".join(sorted(machines)), ""]
    return "\n".join(parts)


def save(row: dict[str, Any], out: Path = OUT) -> None:
    runs = json.loads(out.read_text()) if out.exists() else {}
    runs[row["run"]] = row
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(runs, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(render(runs))
    print(render({row["run"]: row}))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="JSON file of runs (Markdown beside it)")
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quality")
    q.add_argument("--dataset", default="hipporag_musique_train100")
    q.add_argument("--store", required=True)
    q.add_argument("--limit", type=int, default=None, help="first N questions only")
    c = sub.add_parser("clues")
    c.add_argument("--dataset", default="hipporag_2wiki_tune500")
    c.add_argument("--store", required=True)
    c.add_argument("--limit", type=int, default=100, help="first N questions only")
    for name in ("speed", "speed-child"):
        s = sub.add_parser(name)
        s.add_argument("--size", type=int, required=True)
        s.add_argument("--store", required=True)
        s.add_argument("--queries", type=int, default=100)
        s.add_argument("--warm", type=int, default=10, help="recalls before measuring (a long-running server's caches)")
        s.add_argument("--mode", nargs="*", default=["store", "memory"])
        s.add_argument("--server-pid", type=int, help="the Neo4j's process, when it runs on this machine: its CPU "
                       "time a recall is recorded (scripts/neo4j writes it to $HIPPO_NEO4J_HOME/run/neo4j.pid)")
        s.add_argument("--replay", type=int, default=0, help="with --server-pid: run up to N of each statement "
                       "the store-side recalls ran again, one at a time, for Neo4j's CPU per statement")
    w = sub.add_parser("serve")
    w.add_argument("--dataset", default="hipporag_musique_train100")
    w.add_argument("--store", required=True)
    w.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    w.add_argument("--mode", nargs="+", default=["store", "memory"])
    w.add_argument("--clients", type=int, default=8)
    w.add_argument("--requests", type=int, default=200)
    w.add_argument("--max-seconds", type=float, default=40.0)
    for name in ("writes", "writes-child"):
        r = sub.add_parser(name)
        r.add_argument("--store", required=True)
        r.add_argument("--writes", type=int, default=20)
        r.add_argument("--mode", nargs="*", default=["store", "memory"])
    v = sub.add_parser("visible")
    v.add_argument("--store", required=True)
    v.add_argument("--writes", type=int, default=10)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.command == "quality":
        save(quality(args.dataset, args.store, args.limit), args.out)
    elif args.command == "clues":
        save(clues(args.dataset, args.store, args.limit), args.out)
    elif args.command == "serve":
        save(serve(args.dataset, args.store, args.processes, args.mode, args.clients, args.requests,
                   args.max_seconds), args.out)
    elif args.command == "visible":
        save(visible(args.store, args.writes), args.out)
    elif args.command == "writes":
        save(writes_run(args.store, args.writes, args.mode), args.out)
    elif args.command == "writes-child":
        print(json.dumps(writes_child(args.store, args.mode[0], args.writes)))
    elif args.command == "speed":
        save(speed(args.size, args.store, args.queries, args.mode, args.warm, args.server_pid, args.replay), args.out)
    else:
        print(json.dumps(speed_child(args.size, args.store, args.mode[0], args.queries, args.warm, args.server_pid,
                                     args.replay)))


if __name__ == "__main__":
    main()
