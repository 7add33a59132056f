"""Hit assembly (``hippo.memory.hits.assemble_hits``): pure, no store."""

from __future__ import annotations

from hippo.memory.hits import assemble_hits
from hippo.models import Passage


def _reader(texts: dict[str, str], reads: list[list[str]]):
    def read(ids: list[str]) -> dict[str, Passage]:
        reads.append(ids)
        return {pid: Passage(id=pid, doc_id=f"d{pid}", text=texts[pid]) for pid in ids if pid in texts}
    return read


def test_hits_read_about_k_passages_not_the_whole_ranking():
    ranking = [(f"p{i}", 1.0 - i / 100) for i in range(40)]
    reads: list[list[str]] = []
    hits = assemble_hits(ranking, _reader({pid: f"text {pid}" for pid, _ in ranking}, reads), k=10)
    assert [h.id for h in hits] == [f"p{i}" for i in range(10)]
    assert sum(map(len, reads)) <= 12


def test_duplicates_and_missing_passages_read_further_down_the_ranking():
    ranking = [(f"p{i}", 1.0 - i / 100) for i in range(40)]
    texts = {pid: ("same text" if i < 15 else f"text {pid}") for i, (pid, _) in enumerate(ranking) if i != 16}
    reads: list[list[str]] = []
    hits = assemble_hits(ranking, _reader(texts, reads), k=10)
    assert [h.id for h in hits] == ["p0", "p15", *[f"p{i}" for i in range(17, 25)]]
    assert len(reads) == 2 and reads[1][0] == "p12"  # the second window starts where the first ended
    assert len({pid for window in reads for pid in window}) == sum(map(len, reads))  # nothing read twice


def test_a_token_budget_ends_the_list_at_the_first_hit_that_does_not_fit():
    ranking = [(f"p{i}", 1.0 - i / 100) for i in range(40)]
    texts = {pid: f"{pid} " + "word " * (10 if pid != "p3" else 400) for pid, _ in ranking}
    reads: list[list[str]] = []
    hits = assemble_hits(ranking, _reader(texts, reads), k=10, token_budget=100)
    assert [h.id for h in hits] == ["p0", "p1", "p2"]
    assert len(reads) == 1
