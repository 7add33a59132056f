"""Clue-guided retrieval against plain retrieval of the original question, at the same passage budget.

For each question the same budget of B passages (B = 2, 5, 10) is filled two
ways, and the gold (supporting) documents each run finds are compared:

- ``dense``: plain dense retrieval of the question, vs the same ranking with
  the passages the clues found woven in (``hippo.memory.clues.interleave``);
- ``hippo``: plain ``recall``, vs ``recall(expand=True)``.

The clues are those ``recall(expand=True)`` returns after its guards: offline
(no LLM here) they come from the kept facts and the facts around the top
seeds; with ``HIPPO_LLM_MODEL`` set, the LLM writes sub-questions and spans
and the recognition filter runs on both arms. Following seed 001, a **gain**
is a supporting document the clue-guided run has within its budget and the
plain run misses, a **loss** the reverse; recall differences are reported
beside them, never instead.

    python benchmarks/clues.py --dataset hipporag_musique_train100
    python benchmarks/clues.py --dataset hipporag_hotpotqa_train100 --share 0.2 --share 0.4
    python benchmarks/clues.py --smoke
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from benchmarks.common import (CACHE, RESULTS, Stopwatch, igraph_single_thread, log, machine_info, machine_line,
                                   make_settings, markdown_table, offline, parse_overrides, write_outputs)
    from benchmarks.quality import CachedEmbedder, cache_path, open_indexed, question_type
except ImportError:  # run as ``python benchmarks/clues.py``
    from common import (CACHE, RESULTS, Stopwatch, igraph_single_thread, log, machine_info,  # type: ignore
                        machine_line, make_settings, markdown_table, offline, parse_overrides, write_outputs)
    from quality import CachedEmbedder, cache_path, open_indexed, question_type  # type: ignore

offline()

from hippo.datasets import Dataset, Question, load_dataset  # noqa: E402
from hippo.embed import SentenceEmbedder  # noqa: E402
from hippo.evaluation import top_documents  # noqa: E402
from hippo.memory.clues import interleave  # noqa: E402
from hippo.memory.engine import Memory  # noqa: E402
from hippo.models import Hit, RecallResult  # noqa: E402

BUDGETS = (2, 5, 10)
HITS = max(BUDGETS)
CLUES = 6  # n: the query and up to five clues


@dataclass
class Arm:
    """One comparison (plain vs guided) under one setting, over all questions."""

    name: str
    share: float
    gains: dict[int, int] = field(default_factory=lambda: dict.fromkeys(BUDGETS, 0))
    losses: dict[int, int] = field(default_factory=lambda: dict.fromkeys(BUDGETS, 0))
    plain_found: dict[int, int] = field(default_factory=lambda: dict.fromkeys(BUDGETS, 0))
    guided_found: dict[int, int] = field(default_factory=lambda: dict.fromkeys(BUDGETS, 0))
    questions_gained: dict[int, int] = field(default_factory=lambda: dict.fromkeys(BUDGETS, 0))
    questions_lost: dict[int, int] = field(default_factory=lambda: dict.fromkeys(BUDGETS, 0))
    gains_by_type: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    losses_by_type: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    gain_sources: Counter = field(default_factory=Counter)  # clue kind that found a gained document at B=5
    per_question: dict[str, dict[str, Any]] = field(default_factory=dict)

    def count(self, q: Question, gold: set[str], plain: list[Hit], guided: list[Hit], result: RecallResult,
              doc_of: dict[str, str]) -> None:
        record: dict[str, Any] = {}
        for b in BUDGETS:
            have_plain = set(top_documents(plain, b)) & gold
            have_guided = set(top_documents(guided, b)) & gold
            gained, lost = have_guided - have_plain, have_plain - have_guided
            self.gains[b] += len(gained)
            self.losses[b] += len(lost)
            self.plain_found[b] += len(have_plain)
            self.guided_found[b] += len(have_guided)
            self.questions_gained[b] += bool(gained)
            self.questions_lost[b] += bool(lost)
            if b == 5:
                self.gains_by_type[question_type(q)] += len(gained)
                self.losses_by_type[question_type(q)] += len(lost)
                for doc in gained:
                    kinds = {c.kind for c in result.clues[1:] for pid in c.passage_ids if doc_of.get(pid) == doc}
                    self.gain_sources.update(kinds or {"unknown"})
                record = {"gained": sorted(gained), "lost": sorted(lost)}
        self.per_question[q.id] = record


@dataclass
class ClueStats:
    questions: int = 0
    clues: int = 0
    by_kind: Counter = field(default_factory=Counter)
    grounded: Counter = field(default_factory=Counter)
    passages: int = 0
    gold_passages: int = 0
    new_gold: int = 0  # gold documents a clue found that plain recall had not in its top 10
    strategies: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)

    def add(self, result: RecallResult, gold: set[str], plain_docs: set[str], doc_of: dict[str, str]) -> None:
        self.questions += 1
        self.strategies[result.strategy] += 1
        if result.note:
            self.notes[result.note] += 1
        found: set[str] = set()
        for clue in result.clues[1:]:
            self.clues += 1
            self.by_kind[clue.kind] += 1
            self.grounded[str(clue.grounded)] += 1
            self.passages += len(clue.passage_ids)
            docs = {doc_of.get(pid) for pid in clue.passage_ids}
            self.gold_passages += len(docs & gold)
            found |= docs & gold
        self.new_gold += len(found - plain_docs)


def doc_ids(memory: Memory, hits_or_ids: Sequence[Hit | str]) -> dict[str, str]:
    ids = [h.id if isinstance(h, Hit) else h for h in hits_or_ids]
    return {p.id: p.doc_id for p in memory.store.passages(ids)}


def dense_hits(memory: Memory, ranking: list[tuple[str, float]], k: int) -> list[Hit]:
    """Hits in a given ranking order (doc ids looked up), for top-document counting."""
    docs = doc_ids(memory, [pid for pid, _ in ranking[: k * 4]])
    return [Hit(id=pid, text="", score=score, doc_id=docs.get(pid)) for pid, score in ranking[: k * 4]]


def run(memory: Memory, dataset: Dataset, questions: Sequence[Question], share: float,
        base: dict[str, Any]) -> tuple[Arm, Arm, ClueStats, float]:
    settings = make_settings({**base, "clue_passage_share": share})
    variant = Memory(memory.store, settings=settings, embedder=memory.embedder)
    dense_arm, hippo_arm, stats = Arm("dense", share), Arm("hippo", share), ClueStats()
    with Stopwatch() as watch:
        for q in questions:
            gold = dataset.gold_document_ids(q)
            plain = variant.recall(q.question, n=CLUES, k=HITS)
            guided = variant.recall(q.question, n=CLUES, k=HITS, expand=True)
            clue_ids = [pid for c in guided.clues for pid in c.passage_ids]
            doc_of = doc_ids(variant, [*clue_ids, *(h.id for h in guided.hits)])
            stats.add(guided, gold, set(top_documents(plain.hits, HITS)), doc_of)
            hippo_arm.count(q, gold, plain.hits, guided.hits, guided, doc_of)

            dense = variant.retrieve(q.question, k=HITS * 4)
            usable = [c.passage_ids for c in guided.clues[1:] if c.grounded is not False and c.kind != "entity"]
            woven = interleave([(h.id, h.score) for h in dense], usable, share)
            dense_arm.count(q, gold, dense, dense_hits(variant, woven, HITS), guided, doc_of)
    variant.llm.close()  # the store stays open: it belongs to ``memory``
    return dense_arm, hippo_arm, stats, watch.seconds


# -- output ------------------------------------------------------------------------------------


def arm_record(arm: Arm, n_gold: int) -> dict[str, Any]:
    return {
        "arm": arm.name, "share": arm.share, "gold_documents": n_gold,
        **{f"{name}@{b}": getattr(arm, name)[b] for name in ("gains", "losses", "plain_found", "guided_found",
                                                              "questions_gained", "questions_lost")
           for b in BUDGETS},
        "gains_by_type@5": dict(arm.gains_by_type), "losses_by_type@5": dict(arm.losses_by_type),
        "gain_sources@5": dict(arm.gain_sources), "per_question": arm.per_question,
    }


def render(record: dict[str, Any]) -> str:
    parts = [f"# Clue-guided vs plain retrieval at the same passage budget ({record['mode']})", ""]
    for ds in record["datasets"]:
        parts += [f"## {ds['dataset']}: {ds['n_questions']} questions, {ds['gold_documents']} supporting "
                  f"documents, {ds['extractor']} graph", ""]
        header = ["arm", "share", *(f"gain / loss @{b}" for b in BUDGETS), "net @5",
                  *(f"R@{b} plain → guided" for b in BUDGETS), "questions +/− @5"]
        rows = []
        for a in ds["arms"]:
            n = a["gold_documents"] or 1
            rows.append([a["arm"], f"{a['share']:.1f}",
                         *(f"+{a[f'gains@{b}']} / −{a[f'losses@{b}']}" for b in BUDGETS),
                         f"{a['gains@5'] - a['losses@5']:+d}",
                         *(f"{100 * a[f'plain_found@{b}'] / n:.1f} → {100 * a[f'guided_found@{b}'] / n:.1f}"
                           for b in BUDGETS),
                         f"{a['questions_gained@5']} / {a['questions_lost@5']}"])
        parts += [markdown_table(header, rows), ""]
        types = sorted({t for a in ds["arms"] for t in (*a["gains_by_type@5"], *a["losses_by_type@5"])})
        if types:
            parts += ["Gains / losses at B=5 by question type:", "",
                      markdown_table(["arm", "share", *types],
                                     [[a["arm"], f"{a['share']:.1f}",
                                       *(f"+{a['gains_by_type@5'].get(t, 0)} / −{a['losses_by_type@5'].get(t, 0)}"
                                         for t in types)] for a in ds["arms"]]), ""]
        s = ds["clue_stats"]
        q = max(1, s["questions"])
        parts += [f"Clues per question (after the guards, query excluded): {s['clues'] / q:.2f} "
                  f"({', '.join(f'{k} {v}' for k, v in sorted(s['by_kind'].items()))}); grounded: "
                  f"{dict(s['grounded'])}; passages found per question: {s['passages'] / q:.1f}, of which "
                  f"gold {s['gold_passages'] / q:.2f}; gold documents found by a clue and missing from plain "
                  f"recall's top {HITS}: {s['new_gold']}. Gained documents at B=5 were found by: "
                  f"{ds['arms'][0]['gain_sources@5'] or '–'} (dense arm). Strategies: {dict(s['strategies'])}. "
                  f"Query time (both arms, all shares): {ds['seconds']:.0f} s.", ""]
    parts += [record["what_an_llm_adds"], "", f"Machine: {machine_line(record['machine'])}.", "",
              f"Command: `{record['command']}`"]
    return "\n".join(parts)


WHAT_AN_LLM_ADDS = (
    "Offline, the clues are graph facts: the kept facts, whose source passages plain recall has mostly "
    "ranked already, and facts around the top seeds, which can reach a next hop. An LLM clue writer "
    "(`HIPPO_LLM_MODEL`) adds what the graph cannot word: sub-questions naming the bridge entity a "
    "multi-hop question hides (\"Where was Tobiah Südhof born?\") and text spans phrased like the "
    "answering passage. Those clues are where the fluent-clue guard matters: a generated clue naming "
    "something the graph does not hold is marked `grounded: false` and its passages are never used. "
    "The same run with an LLM measures its gain under the same rule; none was reachable here."
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", action="append", default=[],
                        help="folder under $HIPPO_DATASETS (repeatable); default: MuSiQue and HotpotQA")
    parser.add_argument("--extractor", choices=("spacy", "openie"), default="spacy")
    parser.add_argument("--share", type=float, action="append", default=[],
                        help="clue_passage_share values to compare (repeatable; default 0.2, 0.4, 0.6)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--quick", type=int, metavar="N", help="only the first N questions")
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="seconds-long run on hipporag_sample (for CI)")
    args = parser.parse_args(argv)
    args.dataset = args.dataset or ["hipporag_musique_train100", "hipporag_hotpotqa_train100"]
    args.share = args.share or [0.2, 0.4, 0.6]
    if args.smoke:
        args.dataset, args.share = ["hipporag_sample"], [0.4]
        scratch = Path(tempfile.mkdtemp(prefix="hippo-bench-"))
        args.cache_dir, args.out = scratch / "cache", scratch
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    overrides = parse_overrides(args.overrides)
    settings = make_settings(overrides)
    mode = f"LLM {settings.llm_model}" if settings.llm_model else "offline clue sources, no LLM"
    datasets: list[dict[str, Any]] = []
    with Stopwatch() as total, igraph_single_thread():
        embedder = CachedEmbedder(SentenceEmbedder(settings.embedding_model,
                                                   batch_size=settings.embedding_batch_size))
        for name in args.dataset:
            dataset = load_dataset(name)
            questions = dataset.questions[: args.quick] if args.quick else dataset.questions
            path = cache_path(dataset.name, args.extractor, settings, args.cache_dir)
            memory, info = open_indexed(dataset, args.extractor, settings, embedder, path)
            n_gold = sum(len(dataset.gold_document_ids(q)) for q in questions)
            arms: list[dict[str, Any]] = []
            stats: ClueStats | None = None
            seconds = 0.0
            for share in args.share:
                dense_arm, hippo_arm, share_stats, took = run(memory, dataset, questions, share, overrides)
                stats = stats or share_stats  # clues do not depend on the share
                seconds += took
                for arm in (dense_arm, hippo_arm):
                    arms.append(arm_record(arm, n_gold))
                    log(f"  {dataset.name} {arm.name} share {share}: gains/losses @5 "
                        f"+{arm.gains[5]}/-{arm.losses[5]} ({took:.0f}s)")
            memory.close()
            datasets.append({"dataset": dataset.name, "extractor": args.extractor, "n_questions": len(questions),
                             "gold_documents": n_gold, "arms": arms, "seconds": seconds,
                             "clue_stats": {k: (dict(v) if isinstance(v, Counter) else v)
                                            for k, v in vars(stats).items()} if stats else {},
                             "index": vars(info)})
    record: dict[str, Any] = {
        "mode": mode, "budgets": list(BUDGETS), "clues_n": CLUES, "shares": args.share,
        "settings_overrides": overrides, "settings": settings.model_dump(mode="json"),
        "datasets": datasets, "what_an_llm_adds": WHAT_AN_LLM_ADDS,
        "wall_seconds": total.seconds, "machine": machine_info(),
        "command": "python benchmarks/clues.py " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    markdown = render(record)
    # The default run is the record; other extractors, partial or tweaked runs get their own files.
    stem = "clues" + (f"-{args.extractor}" if args.extractor != "spacy" else "")
    stem += f"-quick{args.quick}" if args.quick else ""
    if overrides:
        stem += "-set-" + hashlib.sha1(json.dumps(overrides, sort_keys=True).encode()).hexdigest()[:8]
    json_path, md_path = write_outputs(stem, record, markdown, args.out)
    print(markdown)
    log(f"wrote {json_path} and {md_path} ({total.seconds:.0f}s)")
    return record


if __name__ == "__main__":
    main()
