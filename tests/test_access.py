"""Access control inside the graph: principals see nothing derived only from spaces they cannot read.

A "mixed" store holds the visible corpus (the sample, in ``org``, plus a few
documents in ``user:alice`` and ``team:eng``) and restricted documents in
``user:bob`` and ``team:secret`` carrying unique canary tokens: in passage
text, as entity names and as relation predicates, some of them relations
between entities the visible corpus also mentions. Principals without access
run hundreds of recalls, retrieves and context calls whose queries name the
canaries; no canary or restricted id may appear anywhere in the serialized
output, and every ranking must equal the one from a store that only ever held
what that principal may read. Every check first shows the canary is there
for a principal who may read it, so the suite could fail.

Runs on SQLite and on Neo4j (``NEO4J_URI``, see ``scripts/neo4j``).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hippo import Memory, Settings
from hippo.access import (
    ClearResult,
    Grant,
    Principal,
    ScopedMemory,
    SessionRegistry,
    admin_principal,
    derive_principal,
    user_space,
)
from hippo.access.keys import KeyRing, key_hash, principal_for_key, read_key_file
from hippo.datasets import SAMPLE
from hippo.errors import AccessDenied, InvalidInput, NotFound
from hippo.extract import SpacyExtractor
from hippo.extract.base import Extraction, NamedEntity, Triple
from hippo.models import Passage
from hippo.spaces import DERIVED
from hippo.store import SQLiteStore

MODES = ("dense", "bm25", "hybrid")
GRANTS = [Grant(space="team:eng", read=["group:eng"], write=["group:eng"]),
          Grant(space="team:secret", read=["user:bob"], write=["user:bob"])]


# --- the corpus: visible documents, and restricted ones carrying canaries ----------------------------

def _word(rng: random.Random, syllables: int) -> str:
    parts = ["zor", "vex", "quil", "thra", "mox", "drev", "ulk", "pyr", "snav", "grel", "yth", "bram", "kesh"]
    return "".join(rng.choice(parts) for _ in range(syllables))


@dataclass(frozen=True)
class Canary:
    text: str  # a word only the passage text holds
    person: str  # an entity name (PERSON)
    org: str  # an entity name (ORG)
    predicate: str  # a relation predicate
    space: str

    def tokens(self) -> list[str]:
        return [self.text, self.person, self.org, self.predicate]


def _canaries(n: int = 8) -> list[Canary]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        out.append(Canary(
            text=f"{_word(rng, 3)}ite",
            person=f"{_word(rng, 2).title()} {_word(rng, 2).title()}",
            org=f"{_word(rng, 2).title()} Consortium",
            predicate=f"{_word(rng, 2)}ed",
            space="user:bob" if i % 2 == 0 else "team:secret",
        ))
    return out


CANARIES = _canaries()


def _restricted_documents() -> list[dict[str, Any]]:
    docs = []
    for i, c in enumerate(CANARIES):
        docs.append({
            "id": f"secret-{i}",
            "title": f"Memo {i} on {c.text}",
            "text": (f"{c.person} of the {c.org} met Tobiah Südhof in Caldry to discuss the {c.text} ledger. "
                     f"{c.person} {c.predicate} the Veskari crown reserves before the vote. "
                     f"The {c.text} accord was sealed on Lanthorn Isle, and Tobiah Südhof {c.predicate} Caldry."),
            "space": c.space,
        })
    return docs


VISIBLE_EXTRA = [
    {"id": "alice-1", "title": "Alice's notes", "space": "user:alice",
     "text": "Alice is planning a trip to Caldry to see the tide-clock museum and the glassworks of Morrowen."},
    {"id": "alice-2", "title": "Alice on kelp", "space": "user:alice",
     "text": "Alice wants to learn how kelp processing in the Veskari Archipelago works."},
    {"id": "eng-1", "title": "Engineering sync", "space": "team:eng",
     "text": "The engineering team maintains the harbour tide sensors in Caldry and the Südholm relay."},
    {"id": "eng-2", "title": "Relay outage", "space": "team:eng",
     "text": "The Südholm relay failed during the winter storm; Greta Südhof's lighthouse kept the signal."},
]


HIDDEN_SPELLING = "Tobiah-Südhof"  # normalizes to the sample's "Tobiah Südhof": one entity, two spellings


class CanaryExtractor:
    """spaCy, plus the canaries as named entities and triples (so they surely become graph records)."""

    name = "spacy+canaries"

    def __init__(self) -> None:
        self.base = SpacyExtractor()

    def extract(self, passages: list[Passage]) -> list[Extraction]:
        out = self.base.extract(passages)
        for passage, extraction in zip(passages, out, strict=True):
            for c in CANARIES:
                if c.text in passage.text:
                    # A shared entity spelled this way only here: its display name must not reach outsiders.
                    extraction.entities.insert(0, NamedEntity(name=HIDDEN_SPELLING, type="PERSON"))
                    extraction.entities += [NamedEntity(name=c.person, type="PERSON"),
                                            NamedEntity(name=c.org, type="ORG")]
                    extraction.triples += [Triple(subject=c.person, predicate=c.predicate, object="Veskari crown"),
                                           Triple(subject=c.person, predicate="belongs to", object=c.org),
                                           # a hidden relation between two entities the visible corpus holds
                                           Triple(subject="Tobiah Südhof", predicate=c.predicate, object="Caldry")]
        return out


MEMORIES = {
    "alice": ["My name is Alice Brennan and I live in Caldry.", "Alice is working on the tide-sensor dashboard.",
              "Alice wants to visit every lighthouse of the Veskari Archipelago.", "Alice enjoys glassmaking."],
    "carol": ["Carol leads the Südholm relay project.", "Carol's manager is Greta Lind."],
    "bob": [f"Bob's colleague {c.person} handles the {c.text} ledger for the {c.org}." for c in CANARIES[:4]],
}


def _remember(memory: Memory, users: list[str]) -> None:
    for user in users:
        scoped = ScopedMemory(memory, derive_principal(user))
        for text in MEMORIES[user]:
            scoped.remember(text)


def _sample() -> list[dict[str, Any]]:
    return [{**d, "space": "org"} for d in json.loads((SAMPLE / "corpus.json").read_text(encoding="utf-8"))]


ALICE = derive_principal("alice", grants=GRANTS)
CAROL = derive_principal("carol", groups=["eng"], grants=GRANTS)
BOB = derive_principal("bob", grants=GRANTS)


def _readable_docs(principal: Principal) -> list[dict[str, Any]]:
    return [d for d in [*_sample(), *VISIBLE_EXTRA] if principal.can_read(d["space"])]


def _mixed_docs() -> list[dict[str, Any]]:
    """Restricted documents first (they would name shared entities first), then interleaved."""
    restricted = _restricted_documents()
    visible = [*_sample(), *VISIBLE_EXTRA]
    mixed = restricted[:2]
    rest = restricted[2:]
    for i, doc in enumerate(visible):
        mixed.append(doc)
        if i % 9 == 4 and rest:
            mixed.append(rest.pop(0))
    return mixed + rest


def _queries() -> list[str]:
    questions = [q["question"] for q in json.loads((SAMPLE / "questions.json").read_text(encoding="utf-8"))]
    named = []
    for c in CANARIES:
        named += [c.text, f"What did {c.person} do with the Veskari crown?", f"Who {c.predicate} Caldry?",
                  f"{c.org} and Tobiah Südhof in Caldry", f"the {c.text} accord on Lanthorn Isle"]
    mixed_in = [f"{q} {CANARIES[i % len(CANARIES)].person}" for i, q in enumerate(questions[:10])]
    return named + questions + mixed_in


QUERIES = _queries()


# --- stores ------------------------------------------------------------------------------------------


SHARES = {"default": Settings().keyword_prior_share, "no-bm25-prior": 0.0}


@dataclass
class World:
    kind: str
    mixed: dict[str, Memory]  # by SHARES key: the mixed store under those settings
    clean: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (principal, share) -> outputs
    restricted_ids: set[str] = field(default_factory=set)

    @property
    def memory(self) -> Memory:
        return self.mixed["default"]


def _settings(share: str) -> Settings:
    return Settings(keyword_prior_share=SHARES[share])


def _outputs(scoped: ScopedMemory, queries: list[str], modes: tuple[str, ...] = MODES) -> dict[str, Any]:
    """Every output the parity check compares, keyed by call."""
    out: dict[str, Any] = {}
    for q in queries:
        recalled = scoped.recall(q, n=10, k=10)
        out[f"recall|{q}"] = _recall_view(recalled)
        seeds = {s.id: s.weight for s in recalled.seeds}
        out[f"walk|{q}"] = _hits_view(scoped.walk(seeds, k=10))
        out[f"recall|expand|{q}"] = _recall_view(scoped.recall(q, n=10, k=10, expand=True))
        out[f"neighbors|{q}"] = _neighborhood_view(scoped.neighbors(list(seeds), hops=2, limit=500))
        for mode in modes:
            out[f"{mode}|{q}"] = _hits_view(scoped.retrieve(q, k=10, mode=mode))
    return out


def _recall_view(result: Any) -> dict[str, Any]:
    return {"strategy": result.strategy, "note": result.note, "hits": _hits_view(result.hits),
            "clues": [(c.kind, c.query, c.seed_ids, c.weight, c.grounded, c.passage_ids) for c in result.clues],
            "seeds": [(s.id, s.name, s.weight, s.source) for s in result.seeds]}


def _hits_view(hits: list[Any]) -> list[tuple[str, float, list[str], list[str]]]:
    return [(h.id, h.score, h.provenance.nodes, h.provenance.facts) for h in hits]


def _neighborhood_view(around: Any) -> dict[str, Any]:
    """Order-free: edge ends are ordered by vertex number, which differs between stores."""
    return {"seeds": sorted(around.seeds),
            "nodes": {n.id: (n.kind, n.name, n.seed, n.score) for n in around.nodes},
            "edges": {(min(e.src, e.dst), max(e.src, e.dst), e.kind): e.weight for e in around.edges}}


def _same_neighborhood(got: dict[str, Any], want: dict[str, Any], where: str) -> None:
    assert got["seeds"] == want["seeds"], f"{where}: seeds"
    assert got["nodes"].keys() == want["nodes"].keys(), f"{where}: nodes {sorted(got['nodes'].keys() ^ want['nodes'].keys())[:4]}"
    for node, (kind, name, seed, score) in want["nodes"].items():
        g = got["nodes"][node]
        assert g[:3] == (kind, name, seed) and math.isclose(g[3], score, rel_tol=1e-6, abs_tol=1e-9), f"{where}: {node}"
    assert got["edges"].keys() == want["edges"].keys(), f"{where}: edges"
    for edge, weight in want["edges"].items():
        assert math.isclose(got["edges"][edge], weight, rel_tol=1e-9), f"{where}: edge {edge}"


PARITY_QUERIES = QUERIES[::3]
PRINCIPALS = {"alice": ALICE, "carol": CAROL}


def _index(memory: Memory, docs: list[dict[str, Any]]) -> None:
    memory.index(docs, extractor=CanaryExtractor())


def _restricted_ids(memory: Memory) -> set[str]:
    """Ids of every record derived only from restricted documents: passages, facts, entities, documents."""
    graph = memory.store.load_graph()
    hidden = {pid for pid, space in graph.passages if space in ("user:bob", "team:secret")}
    visible_entities = {e for p, e in graph.mentions if p not in hidden}
    ids = set(hidden) | {f"secret-{i}" for i in range(len(CANARIES))}
    ids |= {d.id for d in memory.store.find_documents(spaces=frozenset({"user:bob", "team:secret"}), live=False)}
    ids |= {fid for fid, _, _, p in graph.facts if p in hidden}
    ids |= {e for p, e in graph.mentions if p in hidden and e not in visible_entities}
    return ids


def _build(open_store: Callable[[str], Any], reset: Callable[[], None], embedder: Any,
           kind: str) -> Iterator[World]:
    """Index each principal's clean store (one at a time: Neo4j Community has one database),
    record its outputs under both settings, then index the mixed store."""
    opened: list[Memory] = []

    def memory(name: str, share: str) -> Memory:
        opened.append(Memory(open_store(name), settings=_settings(share), embedder=embedder))
        return opened[-1]

    clean: dict[tuple[str, str], dict[str, Any]] = {}
    for who, principal in PRINCIPALS.items():
        reset()
        clean_memory = memory(f"clean-{who}", "default")
        _index(clean_memory, _readable_docs(principal))
        _remember(clean_memory, [who])
        for share in SHARES:
            modes = MODES if share == "default" else ("dense",)
            clean[(who, share)] = _outputs(ScopedMemory(memory(f"clean-{who}", share), principal),
                                           PARITY_QUERIES, modes)
    reset()
    mixed = memory("mixed", "default")
    _index(mixed, _mixed_docs())
    _remember(mixed, ["bob", "alice", "carol"])
    world = World(kind, {"default": mixed, **{s: memory("mixed", s) for s in SHARES if s != "default"}}, clean)
    world.restricted_ids = _restricted_ids(mixed)
    try:
        yield world
    finally:
        for m in reversed(opened):
            m.close()
        reset()


@pytest.fixture(scope="module", params=["sqlite", "neo4j"])
def world(request: pytest.FixtureRequest, embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    if request.param == "sqlite":
        root = tmp_path_factory.mktemp("access")
        yield from _build(lambda name: SQLiteStore(root / f"{name}.db"), lambda: None, embedder, "sqlite")
    else:
        from hippo.store.neo4j import Neo4jStore

        server = request.getfixturevalue("neo4j_server")
        wipe = request.getfixturevalue("neo4j_wipe")
        yield from _build(lambda _: Neo4jStore(server["uri"], server["user"], server["password"]), wipe,
                          embedder, "neo4j")


# --- helpers -----------------------------------------------------------------------------------------


def _dump(value: Any) -> str:
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, mode="json")
    elif isinstance(value, list):
        value = [v.model_dump(by_alias=True, mode="json") if hasattr(v, "model_dump") else v for v in value]
    return json.dumps(value, ensure_ascii=False, default=str).casefold()


def _echo_free(output: Any, query: str) -> str:
    """The output as JSON without what only repeats the caller's own query: the ``query`` field and
    clue texts that are the query or a phrase of it (their seed ids stay and are checked)."""
    if isinstance(output, str):
        return output.casefold()
    if isinstance(output, list):
        return _dump(output)
    data = output.model_dump(by_alias=True, mode="json")
    data.pop("query", None)
    for clue in data.get("clues", []):
        if clue.get("query") and clue["query"].casefold() in query.casefold():
            clue["query"] = None
    return json.dumps(data, ensure_ascii=False, default=str).casefold()


def _leaks(text: str, world: World) -> list[str]:
    tokens = [t.casefold() for c in CANARIES for t in c.tokens()]
    return [t for t in tokens if t in text] + [i for i in world.restricted_ids if i.casefold() in text]


def _same_ranking(got: list[tuple], want: list[tuple], where: str) -> None:
    """Same ids in the same order; ids whose scores tie (to 1e-9) may swap places."""
    assert len(got) == len(want), f"{where}: {len(got)} hits, a store without the hidden documents gives {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        # Seed weights are rounded to 6 digits, and float32 products can flip that last digit: 1e-5.
        assert math.isclose(g[1], w[1], rel_tol=1e-5, abs_tol=1e-9), f"{where}: hit {i} score {g[:2]} vs {w[:2]}"
        if g[0] != w[0]:
            tied = {x[0] for x in want if math.isclose(x[1], w[1], rel_tol=1e-9, abs_tol=1e-12)}
            assert g[0] in tied, f"{where}: hit {i} is {g[0]}, a store without the hidden documents ranks {w[0]}"
        else:
            same_set = " (the same nodes in another order)" if sorted(g[2]) == sorted(w[2]) else ""
            assert (g[2], g[3]) == (w[2], w[3]), (f"{where}: provenance of {g[0]} differs{same_set}: "
                                                  f"{g[2][:3]}... vs {w[2][:3]}...")


def _same_recall(got: dict[str, Any], want: dict[str, Any], where: str) -> None:
    assert (got["strategy"], got["note"]) == (want["strategy"], want["note"]), where
    _same_ranking(got["hits"], want["hits"], where)
    assert [s[:2] + s[3:] for s in got["seeds"]] == [s[:2] + s[3:] for s in want["seeds"]], f"{where}: seeds"
    for g, w in zip(got["seeds"], want["seeds"], strict=True):
        assert math.isclose(g[2], w[2], rel_tol=1e-5, abs_tol=2e-6), f"{where}: seed weight {g} vs {w}"
    assert [c[:3] + c[4:] for c in got["clues"]] == [c[:3] + c[4:] for c in want["clues"]], f"{where}: clues"


# --- the canaries are there (so the leak checks below could fail) -------------------------------------


def test_canaries_are_in_the_graph_and_found_by_readers(world: World):
    bob = ScopedMemory(world.memory, BOB)
    for c in CANARIES:
        q = f"What did {c.person} do with the Veskari crown?"
        out = _echo_free(bob.recall(q, n=10, k=10), q)
        assert c.text.casefold() in out, "the restricted passage is a hit for its reader"
        assert c.person.casefold() in out, "the canary entity is a seed for its reader"
        assert c.predicate.casefold() in out, "the canary predicate is in a clue for its reader"
        assert c.text.casefold() in _dump(bob.retrieve(c.text, k=5, mode="bm25"))
    q = CANARIES[0].person
    recalled = bob.recall(q, k=10)
    assert any(i in _echo_free(recalled, q) for i in world.restricted_ids)
    seeds = [seed.id for seed in recalled.seeds]
    assert CANARIES[0].text.casefold() in _dump(bob.walk(dict.fromkeys(seeds, 1.0), k=10))
    assert CANARIES[0].org.casefold() in _dump(bob.neighbors(seeds, hops=2, limit=500))
    assert CANARIES[0].text in bob.context(), "bob's context block names his colleagues' ledgers"
    admin = ScopedMemory(world.memory, admin_principal())
    assert CANARIES[1].text.casefold() in _dump(admin.retrieve(CANARIES[1].text, mode="hybrid"))


# --- no leak ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "carol", "alice-asking-hidden-spaces"])
def test_no_canary_reaches_a_principal_without_access(world: World, who: str):
    principal = CAROL if who == "carol" else ALICE
    scoped = ScopedMemory(world.memory, principal)
    asked = ["org", "user:bob", "team:secret", "user:alice"] if who.endswith("hidden-spaces") else None
    calls = 0
    for q in QUERIES:
        outputs = [scoped.recall(q, spaces=asked), scoped.recall(q, n=20, k=30, spaces=asked),
                   scoped.recall(q, n=10, expand=True, spaces=asked)]  # MemoRAG clue expansion, offline
        outputs += [scoped.retrieve(q, k=20, mode=mode, spaces=asked) for mode in MODES]
        seeds = [seed.id for seed in outputs[0].seeds]
        outputs += [scoped.walk(dict.fromkeys(seeds, 1.0), k=20, spaces=asked),
                    scoped.neighbors(seeds, hops=2, limit=200, spaces=asked)]
        outputs.append(scoped.context())  # the principal's own block (cached until a write)
        for output in outputs:
            leaked = _leaks(_echo_free(output, q), world)
            assert not leaked, f"{who} saw {leaked} for {q!r}"
        calls += len(outputs)
    assert calls >= 400
    if who != "alice-asking-hidden-spaces":
        assert MEMORIES[principal.user_id][0] in scoped.context(), "the block holds the principal's own memories"
    hidden = sorted(world.restricted_ids)
    assert scoped.walk(dict.fromkeys(hidden, 1.0), k=50, spaces=asked) == [], "hidden seed ids are unknown ids"
    assert scoped.neighbors(hidden, hops=3, spaces=asked).nodes == []


def test_explicitly_asking_for_a_hidden_space_reads_nothing(world: World):
    scoped = ScopedMemory(world.memory, ALICE)
    c = CANARIES[0]
    result = scoped.recall(c.text, spaces=["user:bob"])
    assert result.hits == [] and result.seeds == [] and result.strategy == "empty"
    assert [cl.query for cl in result.clues] == [c.text], "the only clue is the caller's own query"
    for mode in MODES:
        assert scoped.retrieve(c.text, mode=mode, spaces=["user:bob", "team:secret"]) == []


def test_readers_of_one_restricted_space_do_not_see_another(world: World):
    """Bob reads user:bob and team:secret; a principal granted only team:secret sees none of user:bob."""
    secret_only = derive_principal("dave", read=["team:secret"])
    scoped = ScopedMemory(world.memory, secret_only)
    for c in CANARIES:
        q = f"{c.text} {c.person}"
        out = _echo_free(scoped.recall(q, n=10, k=20), q)
        if c.space == "team:secret":
            assert c.text.casefold() in out
        else:
            assert c.text.casefold() not in out and c.person.casefold() not in out
            assert c.predicate.casefold() not in out


# --- parity with a store that never held the hidden documents -------------------------------------------


@pytest.mark.parametrize("share", sorted(SHARES))
@pytest.mark.parametrize("who", sorted(PRINCIPALS))
def test_rankings_equal_a_store_without_the_hidden_documents(world: World, who: str, share: str):
    """Recall (hits, seeds, clues) and retrieval rankings for what the principal may read are the
    ones a store that never held the hidden documents gives. ``default``: the default settings, BM25
    in the passage prior, bm25 and hybrid retrieval included; ``no-bm25-prior``: recall and dense."""
    modes = MODES if share == "default" else ("dense",)
    got = _outputs(ScopedMemory(world.mixed[share], PRINCIPALS[who]), PARITY_QUERIES, modes)
    want = world.clean[(who, share)]
    mismatches = []
    for key, value in want.items():
        try:
            if key.startswith("recall|"):
                _same_recall(got[key], value, key)
            elif key.startswith("neighbors|"):
                _same_neighborhood(got[key], value, key)
            else:
                _same_ranking(got[key], value, key)
        except AssertionError as exc:
            mismatches.append(str(exc).splitlines()[0])
    kinds: dict[str, int] = {}
    for m in mismatches:
        call, _, rest = m.partition("|")
        what = rest.rsplit(": ", 1)[-1] if "provenance" not in rest else "provenance order" if "another order" in rest \
            else "provenance"
        kinds[f"{call}: {what.split(' ')[0] if what.startswith('entity:') else what}"] = \
            kinds.get(f"{call}: {what.split(' ')[0] if what.startswith('entity:') else what}", 0) + 1
    assert not mismatches, f"{len(mismatches)} of {len(want)} outputs differ ({kinds}): {mismatches[:4]}"


def test_shared_entity_names_come_from_what_the_reader_may_see(world: World):
    """An entity a hidden passage named first keeps the visible corpus's spelling for outsiders.

    The restricted memos, indexed first, spell "Tobiah Südhof" as "Tobiah-Südhof" (the same entity
    once normalized). Seeds and graph nodes alice gets must carry a spelling some visible text has.
    """
    scoped = ScopedMemory(world.memory, ALICE)
    visible_text = _dump([d["text"] + " " + d["title"] for d in _readable_docs(ALICE)] + MEMORIES["alice"])
    assert HIDDEN_SPELLING.casefold() not in visible_text
    names = set()
    for q in [*PARITY_QUERIES, "Who is Tobiah Südhof?", "What did Tobiah Südhof invent?"]:
        recalled = scoped.recall(q, n=10, k=10)
        names |= {seed.name for seed in recalled.seeds}
        around = scoped.neighbors([seed.id for seed in recalled.seeds], hops=1, limit=200)
        names |= {n.name for n in around.nodes if n.kind == "entity"}
    assert "Tobiah Südhof" in names or HIDDEN_SPELLING in names, "the shared entity is reached"
    hidden_only = sorted(n for n in names if n.casefold() not in visible_text)
    assert not hidden_only, f"entity names spelled only in hidden passages: {hidden_only}"


# --- writes ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("space", ["org", "user:bob", "team:secret", "team:eng"])
def test_writes_to_unwritable_spaces_fail_and_change_nothing(world: World, space: str):
    scoped = ScopedMemory(world.memory, ALICE)
    before = (world.memory.store.revision(), world.memory.stats())
    with pytest.raises(AccessDenied, match=f"may not write space '{space}'") as caught:
        scoped.index([{"title": "x", "text": "Alice writes here"}], space=space)
    assert caught.value.space == space and caught.value.right == "write"
    with pytest.raises(AccessDenied, match=f"'{space}'"):  # one bad document stops the whole batch
        scoped.index([{"title": "ok", "text": "mine", "space": "user:alice"},
                      {"title": "x", "text": "theirs", "space": space}])
    assert (world.memory.store.revision(), world.memory.stats()) == before


def test_a_read_only_key_cannot_write_even_its_own_space(world: World):
    reader = derive_principal("alice", scopes=["read"])
    before = world.memory.store.revision()
    with pytest.raises(AccessDenied, match="no 'write' scope"):
        ScopedMemory(world.memory, reader).index(["note"], space="user:alice")
    assert world.memory.store.revision() == before
    writer = derive_principal("alice", scopes=["write"])
    with pytest.raises(AccessDenied, match="no 'read' scope"):
        ScopedMemory(world.memory, writer).recall("Caldry")


def test_store_wide_statistics_are_for_admins(world: World):
    with pytest.raises(AccessDenied, match="admin"):
        ScopedMemory(world.memory, ALICE).stats()
    assert ScopedMemory(world.memory, admin_principal()).stats().passages > 0


def test_a_principal_lists_and_sizes_only_the_spaces_it_may_read(world: World):
    admin, alice = ScopedMemory(world.memory, admin_principal()), ScopedMemory(world.memory, ALICE)
    assert "user:bob" in admin.live_spaces() and "user:bob" not in alice.live_spaces()
    assert alice.live_spaces() == admin.live_spaces() & ALICE.read_spaces()
    assert alice.text_form(["user:bob", "team:secret"]).model_dump() == {"tokens": 0, "entities": 0, "facts": 0}
    assert alice.text_form() == admin.text_form(alice.live_spaces())
    assert 0 < alice.text_form().tokens < admin.text_form().tokens


# --- principals, grants, keys (no store needed) ----------------------------------------------------------


def test_principal_derivation():
    assert ALICE.readable == {"org", "user:alice"} and ALICE.writable == {"user:alice"}
    assert CAROL.readable == {"org", "user:carol", "team:eng"} and CAROL.writable == {"user:carol", "team:eng"}
    assert BOB.can_read("team:secret") and not ALICE.can_read("team:secret")
    assert not ALICE.can_write("org") and admin_principal().can_write("org")
    assert admin_principal().read_spaces() is None and ALICE.read_spaces() == ALICE.readable
    everyone = derive_principal("zed", grants=[Grant(space="team:wiki", read=["*"])])
    assert everyone.can_read("team:wiki") and not everyone.can_write("team:wiki")
    with pytest.raises(InvalidInput, match="^scopes: unknown scope"):
        derive_principal("x", scopes=["read", "sudo"])
    with pytest.raises(InvalidInput, match="^user_id: "):
        derive_principal("")


def test_sessions_belong_to_the_user_who_opened_them():
    registry = SessionRegistry()
    alice = registry.claim(ALICE, "s1")
    assert alice.can_read("session:s1") and alice.can_write("session:s1")
    with pytest.raises(AccessDenied, match="session:s1"):
        registry.claim(BOB, "s1")
    assert registry.claim(admin_principal(), "s1").can_read("session:s1")
    assert registry.claim(ALICE, "s1") == alice


def test_one_session_registry_for_every_way_in(tmp_path: Path):
    """A session made over RCP is the same record the facade claims: another user cannot enter it,
    and sessions written by either registry before there was one keep their owners."""
    from hippo.api.rcp.sessions import Sessions

    store = SQLiteStore(tmp_path / "sessions.db")
    try:
        made = Sessions(store).registry.create(ALICE.user_id)  # what memory/build {scope: session} does
        with pytest.raises(AccessDenied, match=f"session:{made.id}"):
            SessionRegistry(store).claim(BOB, made.id)
        assert SessionRegistry(store).claim(ALICE, made.id).can_read(f"session:{made.id}")
        store.put_values("rcp.sessions", {"ses-old": json.dumps({"owner": "alice", "createdAt": "2026-01-01"})})
        store.put_values("hippo.access.sessions", {"s-old": "bob"})
        with pytest.raises(AccessDenied):
            SessionRegistry(store).claim(BOB, "ses-old")
        assert SessionRegistry(store).get("s-old").owner == "bob"
        with pytest.raises(AccessDenied):
            SessionRegistry(store).claim(ALICE, "s-old")
        unowned = SessionRegistry(store).create(None)  # a server without keys made it
        with pytest.raises(AccessDenied):
            SessionRegistry(store).claim(ALICE, unowned.id)
        assert store.get_values("rcp.sessions", [made.id]) == {}  # one namespace is written now
    finally:
        store.close()


def test_api_keys_from_a_toml_file(tmp_path: Path):
    path = tmp_path / "keys.toml"
    path.write_text(f"""
[[keys]]
sha256 = "{key_hash('alice-key')}"
user = "alice"
groups = ["eng"]
scopes = ["read", "write"]

[[keys]]
sha256 = "{key_hash('root-key').upper()}"
user = "ops"
scopes = ["admin"]

[[grants]]
space = "team:eng"
read = ["group:eng"]
""", encoding="utf-8")
    settings = Settings(api_keys=str(path))
    alice = principal_for_key("alice-key", settings=settings)
    assert alice is not None and alice.user_id == "alice" and alice.can_read("team:eng")
    assert not alice.can_write("team:eng") and not alice.has_scope("forget")
    assert principal_for_key("root-key", settings=settings).is_admin
    assert principal_for_key("wrong", settings=settings) is None
    assert principal_for_key("", settings=settings) is None


def test_api_key_file_errors_name_the_field(tmp_path: Path):
    bad = tmp_path / "keys.json"
    bad.write_text(json.dumps({"keys": [{"sha256": "abc", "user": "x"}]}))
    with pytest.raises(InvalidInput, match=r"^api_keys:keys\.0\.sha256: .*64 hex"):
        read_key_file(bad)
    broken = tmp_path / "keys.toml"
    broken.write_text("keys = [")
    with pytest.raises(InvalidInput, match="not valid TOML"):
        read_key_file(broken)
    with pytest.raises(InvalidInput, match="cannot read"):
        read_key_file(tmp_path / "missing.toml")


def test_clear_is_for_the_user_or_an_admin():
    class NoStore:
        store = None

    scoped = ScopedMemory(NoStore(), ALICE, sessions=SessionRegistry())  # type: ignore[arg-type]
    with pytest.raises(AccessDenied, match="may not clear space 'user:bob'"):
        scoped.clear("bob")
    assert ClearResult(space=user_space("a"), dry_run=True).model_dump(by_alias=True)["dryRun"] is True


def test_keys_issued_into_the_store_are_kept_hashed(open_memory: Callable[..., Memory]):
    memory = open_memory()
    ring = KeyRing(store=memory.store)
    key = ring.issue("erin", scopes=["read"], read=["team:eng"], label="ci")
    assert key.startswith("hk_")
    principal = ring.principal_for_key(key)
    assert principal is not None and principal.user_id == "erin" and principal.can_read("team:eng")
    assert not principal.has_scope("write")
    stored = memory.store.get_values("hippo.access.keys", [key_hash(key)])
    assert stored and key not in json.dumps(stored)
    assert principal_for_key(key, store=memory.store) == principal
    assert ring.revoke(key) and ring.principal_for_key(key) is None and not ring.revoke(key)


# --- the lifecycle: remember, forget, restore, history, delete, clear, sessions, context ------------------
# These write into the mixed store, so they come last (parity above needs it untouched).

LIFE = Canary(text="brelquoxite", person="Ythmox Drevsnav", org="Kesh Pyrgrel Guild", predicate="snavulked",
              space="user:bob")
LIFE_TEXTS = [f"Bob's door code for the {LIFE.text} vault is 4471.",
              f"Bob's mentor {LIFE.person} {LIFE.predicate} the budget of the {LIFE.org}.",
              f"Bob wants to move the {LIFE.text} archive to Morrowen by next spring."]


def _life_leaks(text: str) -> list[str]:
    return [t for t in LIFE.tokens() if t.casefold() in text]


def test_remembered_memories_stay_in_their_space(world: World):
    bob, erin = ScopedMemory(world.memory, BOB), ScopedMemory(world.memory, derive_principal("erin"))
    uids = [bob.remember(text).uid for text in LIFE_TEXTS]
    assert {m.uid for m in bob.memories()} >= set(uids)
    block = bob.context()
    assert LIFE.text in block and LIFE.person in block, "bob's own context holds his memories"
    assert LIFE.text in _dump(bob.recall(f"{LIFE.text} vault door code", k=5))

    erin.remember("Erin is planning a glassmaking course in Morrowen.")
    assert erin.memories() and not set(uids) & {m.uid for m in erin.memories()}
    assert not _life_leaks(_dump(erin.memories(spaces=["user:bob", "user:erin"])))
    context = erin.context()
    assert "glassmaking" in context and not _life_leaks(context.casefold())
    with pytest.raises(AccessDenied, match="may not read space 'user:bob'"):
        erin.context("bob")
    for q in [f"{LIFE.text} vault door code", f"What did {LIFE.person} do?", f"{LIFE.org} budget",
              "What does Bob want to move to Morrowen?"]:
        recalled = erin.recall(q, n=10, k=20)
        seeds = [seed.id for seed in recalled.seeds]
        for output in [recalled, *(erin.retrieve(q, k=20, mode=m) for m in MODES),
                       erin.walk(dict.fromkeys(seeds, 1.0)), erin.neighbors(seeds, hops=2)]:
            assert not _life_leaks(_echo_free(output, q)), q
    # the same text in erin's space is erin's own memory, not a confirmation that bob holds it
    copy = erin.remember(LIFE_TEXTS[0])
    assert copy.action == "inserted" and copy.uid not in uids and copy.space == "user:erin"
    assert not set(uids) & {d.uid for d in copy.near_duplicates}


def test_hidden_ids_look_exactly_like_missing_ones(world: World):
    bob = ScopedMemory(world.memory, BOB)
    alice = ScopedMemory(world.memory, ALICE)
    uid = bob.remember(f"Bob's spare {LIFE.text} key is under the mat.", custom_id="spare-key").uid
    revision = world.memory.store.revision()
    for attempt in (lambda i: alice.forget(i), lambda i: alice.forget(i, dry_run=True), alice.restore,
                    lambda i: alice.history(uid=i)):
        with pytest.raises(NotFound) as hidden:
            attempt(uid)
        with pytest.raises(NotFound) as missing:
            attempt("memory:00000000000000000000")
        assert str(hidden.value) == str(missing.value).replace("memory:00000000000000000000", uid)
    with pytest.raises(AccessDenied, match="may not forget space 'user:bob'"):
        alice.forget(custom_id="spare-key", space="user:bob")
    org_doc = world.memory.store.find_documents(spaces=frozenset({"org"}), limit=1)[0]
    with pytest.raises(AccessDenied, match="may not forget space 'org'"):
        alice.forget(org_doc.id)
    assert alice.delete_documents(["secret-0", "secret-1", uid, org_doc.id + "-nope"]) == 0
    with pytest.raises(AccessDenied, match="'org'"):
        alice.delete_documents([org_doc.id])
    assert world.memory.store.revision() == revision, "nothing changed"
    assert "spare" in _dump(bob.recall(f"spare {LIFE.text} key", k=3)), "bob's memory is still there"
    assert bob.forget(uid).passages and bob.restore(uid).passages


def test_indexing_cannot_overwrite_a_hidden_document(world: World):
    """A caller's document ids are owned by their space (``hippo.spaces``): the id of bob's hidden
    document, given by alice, names a document of alice's own, exactly as an unused id does."""
    alice = ScopedMemory(world.memory, ALICE)
    restricted = _restricted_documents()[0]
    [before] = world.memory.store.documents([f"{restricted['space']}/secret-0"])
    hidden = alice.index([{"title": "ok", "text": "fine"}, {"id": "secret-0", "title": "mine", "text": "mine"}],
                         space="user:alice")
    unused = alice.index([{"id": "never-used-0", "title": "mine", "text": "mine too"}], space="user:alice")
    assert hidden.ids[1] == "user:alice/secret-0" and unused.ids == ["user:alice/never-used-0"]
    assert (hidden.passages_added, hidden.documents_updated) == (2, 0) and unused.documents_updated == 0
    # Bob's full id, given by alice, is an id inside her space too.
    full = alice.index([{"id": before.id, "title": "mine", "text": "the same id, from alice"}], space="user:alice")
    assert full.ids == [f"user:alice/{before.id}"] and full.documents_updated == 0
    assert world.memory.store.documents([before.id]) == [before], "bob's document is untouched"
    same = {"title": "Bob's plan", "text": f"Bob plans the {LIFE.text} audit for March."}
    ScopedMemory(world.memory, BOB).index([same], space="user:bob")
    # Derived ids hash the space in: alice's copy neither touches bob's nor tells her it exists.
    mine = alice.index([same], space="user:alice")
    assert (mine.passages_added, mine.passages_unchanged) == (1, 0)
    bobs = world.memory.store.find_documents(spaces=frozenset({"user:bob"}), limit=100)
    assert any(d.title == "Bob's plan" and d.space == "user:bob" for d in bobs)
    revision = world.memory.store.revision()
    org_doc = world.memory.store.find_documents(spaces=frozenset({"org"}), limit=1)[0]
    with pytest.raises(AccessDenied, match="may not write space 'org'"):
        alice.index([{"id": org_doc.id, "title": "x", "text": "replaced"}], space="org")
    assert world.memory.store.revision() == revision
    admin = ScopedMemory(world.memory, admin_principal())
    derived = next(d.id for d in bobs if DERIVED.fullmatch(d.id))  # a memory uid or a derived document id
    for taken in (f"user:bob/{restricted['id']}", derived):  # a space's own id form; a derived id
        with pytest.raises(InvalidInput, match=r"^documents\[0\]\.id: "):
            admin.index([{"id": taken, "title": "x", "text": "an org document"}], space="org")
    assert world.memory.store.revision() == revision
    [stored] = world.memory.store.documents([before.id])
    assert (stored.space, stored.version, stored.forgotten_at) == (restricted["space"], 1, None)


def test_remember_into_other_spaces_is_refused(world: World):
    alice = ScopedMemory(world.memory, ALICE)
    revision = world.memory.store.revision()
    for space in ("org", "user:bob", "team:secret", "session:x"):
        with pytest.raises(AccessDenied, match=f"may not write space '{space}'"):
            alice.remember("Alice was here.", space=space)
        with pytest.raises(AccessDenied, match=f"'{space}'"):
            alice.set_remember_instructions("Remember everything.", space=space)
    assert world.memory.store.revision() == revision
    ScopedMemory(world.memory, BOB).set_remember_instructions(f"Keep {LIFE.text} notes private.")
    with pytest.raises(AccessDenied, match="may not read space 'user:bob'"):
        alice.get_remember_instructions("user:bob")


def test_sessions_are_their_owners(world: World):
    alice = ScopedMemory(world.memory, ALICE).session("trip-42")
    alice.remember(f"In this chat Alice asked about the {LIFE.text} ferry.", space="session:trip-42")
    assert LIFE.text in _dump(alice.recall(f"{LIFE.text} ferry", k=3))
    with pytest.raises(AccessDenied, match="session:trip-42"):
        ScopedMemory(world.memory, BOB).session("trip-42")
    outsider = ScopedMemory(world.memory, CAROL)
    q = f"{LIFE.text} ferry"
    assert LIFE.text not in _echo_free(outsider.recall(q, k=10, spaces=["session:trip-42"]), q)
    assert ScopedMemory(world.memory, ALICE).session("trip-42").principal.can_read("session:trip-42")


def test_clear_a_users_space(world: World):
    frank = ScopedMemory(world.memory, derive_principal("frank"))
    for text in ["Frank likes sailing.", "Frank works on the harbour relay.", "Frank wants a boat."]:
        frank.remember(text)
    frank.index([{"title": "Frank's doc", "text": "Frank's notes on the Südholm relay."}], space="user:frank")
    with pytest.raises(AccessDenied, match="may not clear space 'user:frank'"):
        ScopedMemory(world.memory, ALICE).clear("frank")
    preview = frank.clear()
    assert preview.dry_run and preview.count == 4 and len(frank.memories()) == 3
    done = ScopedMemory(world.memory, admin_principal()).clear("frank", dry_run=False)
    assert done.count == 4 and frank.memories() == [] and frank.context() == ""
    assert all(h.space != "user:frank" for h in frank.retrieve("Frank relay sailing boat", k=20))


# --- over RCP (hippo serve): the API key is the principal ------------------------------------------------


def test_rcp_server_reads_and_writes_as_the_keys_principal(open_memory: Callable[..., Memory], tmp_path: Path):
    import httpx

    from hippo.api.rcp.app import Service
    from hippo.api.rcp.http import background

    keys = {"alice": "alice-rcp-key", "bob": "bob-rcp-key", "root": "root-rcp-key"}
    path = tmp_path / "keys.toml"
    path.write_text("".join(f'[[keys]]\nsha256 = "{key_hash(k)}"\nuser = "{u}"\n'
                            + ('scopes = ["admin"]\n' if u == "root" else "") + "\n" for u, k in keys.items()))
    memory = open_memory(api_keys=str(path))
    _index(memory, [*_sample()[:12], *_restricted_documents()[:2]])
    c = CANARIES[0]
    bob_uid = ScopedMemory(memory, BOB).remember(f"Bob's {c.text} ledger sits with {c.person}.").uid
    hidden_passages = [p for p, space in memory.store.load_graph().passages if space in ("user:bob", "team:secret")]

    with background(Service(memory)) as url:
        ids = iter(range(1, 1000))

        def call(key: str | None, method: str, params: dict | None = None) -> httpx.Response:
            body = {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params or {}}
            return httpx.post(url, json=body, headers={"X-API-Key": key} if key else {}, timeout=120)

        for key in (None, "not-a-key"):
            refused = call(key, "initialize", {"protocolVersion": 1})
            assert refused.status_code == 401 and refused.json()["error"]["code"] == -32012
        for key in keys.values():
            assert "result" in call(key, "initialize", {"protocolVersion": 1}).json()

        def result(key: str, method: str, params: dict) -> Any:
            reply = call(key, method, params).json()
            assert "result" in reply, reply
            return reply["result"]

        def error(key: str, method: str, params: dict) -> dict:
            reply = call(key, method, params).json()
            assert "error" in reply, reply
            return reply["error"]

        alice, bob, root = keys["alice"], keys["bob"], keys["root"]
        q = f"{c.text} ledger {c.person}"
        assert c.text in json.dumps(result(bob, "retrieve", {"query": q, "mode": "hybrid", "k": 5}))
        for mode in ("dense", "sparse", "hybrid"):
            hits = result(alice, "retrieve", {"query": q, "mode": mode, "k": 20})["hits"]
            assert (hits or mode == "sparse") and c.text not in json.dumps(hits).casefold(), mode
        assert result(alice, "graph", {"op": "local", "seedIds": hidden_passages, "k": 10})["hits"] == []
        around = result(alice, "graph", {"op": "neighbors", "seedIds": hidden_passages, "k": 10})
        assert around["nodes"] == [] and around["edges"] == []
        built = result(alice, "memory/build", {"scope": "global"})
        recalled = result(alice, "memory/recall", {"query": q, "memoryId": built["memoryId"], "k": 10})
        assert c.text not in json.dumps(recalled) and c.person not in json.dumps(recalled).replace(q, "")

        mine = result(alice, "x-hippo/remember", {"text": "Alice keeps her notes in Caldry."})
        assert mine["space"] == "user:alice"
        denied = error(alice, "index/add", {"documents": [{"title": "x", "text": "Alice writes to org."}]})
        assert denied["code"] == -32012 and denied["data"] == {"space": "org", "right": "write", "retryable": False}
        assert error(alice, "x-hippo/remember", {"text": "x", "space": "user:bob"})["code"] == -32012
        hidden, missing = (error(alice, "x-hippo/forget", {"uid": u}) for u in (bob_uid, "memory:00000000000000000000"))
        assert hidden["code"] == missing["code"] == -32015
        assert hidden["message"] == missing["message"].replace("memory:00000000000000000000", bob_uid)
        assert result(alice, "index/delete", {"ids": ["secret-0", bob_uid]})["deleted"] == 0
        assert c.text in json.dumps(result(bob, "retrieve", {"query": q, "mode": "hybrid", "k": 5}))
        assert result(root, "index/add", {"documents": [{"title": "Policy", "text": "Refunds within 30 days."}]})
