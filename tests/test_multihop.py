"""Multi-hop recall pieces (issue 14): read-out alignment, the bridge hop, title
matches, relation chains in questions, and chunk-aware OpenIE import."""

import json

import numpy as np
import pytest

from hippo import Memory, Settings
from hippo.extract import OpenIEImport, SpacyExtractor
from hippo.extract.base import Extraction
from hippo.extract.chains import parse_chain
from hippo.extract.spacy import load_pipeline
from hippo.graph import GraphProjection
from hippo.graph.bridge import bridge_seeds, fact_relevance
from hippo.graph.scoring import anchored_facts, passage_mass
from hippo.memory.indexing import split_documents, validate_documents
from hippo.memory.titles import TitleIndex, title_seeds
from hippo.models import Passage
from hippo.store import GraphData


def _hub_graph() -> GraphProjection:
    """"gold" is the only passage naming the seed. "list" names three hubs, entities that
    twenty "filler" passages name too (the way many passages name "United States")."""
    hubs = ["hub-0", "hub-1", "hub-2"]
    fillers = [f"filler-{i}" for i in range(20)]
    mentions = [("gold", "seed"), ("gold", "topic"), *(("list", h) for h in hubs)]
    mentions += [(f, e) for i, f in enumerate(fillers) for e in [*hubs, f"own-{i}"]]
    return GraphProjection.from_data(GraphData(
        passages=[(p, "org") for p in ["gold", "list", *fillers]],
        entities=["seed", "topic", *hubs, *(f"own-{i}" for i in range(20))],
        facts=[("f1", "seed", "topic", "gold")], mentions=mentions, synonyms=[]))


def test_incidence_readout_follows_the_walk_not_the_hubs():
    projection = _hub_graph()
    view = projection.view(None)
    passages = view.passage_vertices
    # The seed, and a flat passage prior, as recall adds.
    ppr = view.pagerank(np.concatenate([[projection.vertex["seed"]], passages]),
                        np.concatenate([[1.0], np.full(len(passages), 0.5)]), 0.5, solver="exact")

    def best(readout: str, aligned: bool) -> str:
        if aligned:  # entity mass divided by visible strength, as recall reads it
            found, mass = view.passage_scores(ppr, readout, 0.5)
        else:
            scores, at, incidence = view.local_readout(ppr, True)
            found, mass = ppr.vertices[at], passage_mass(scores, at, incidence, readout)
        return projection.record_ids[int(found[int(np.argmax(mass))])]

    # The defect: summed raw entity mass credits each list with the hub's whole mass.
    assert best("incidence", False) != "gold"
    assert best("incidence", True) == "gold"
    assert best("blend", True) == "gold"
    assert best("passage", True) == "gold"


def test_bridge_seeds_come_from_the_best_passages_and_skip_dead_ends():
    projection = _hub_graph()
    view = projection.view(None)
    mass = np.zeros(len(view.passage_vertices))
    mass[:2] = [1.0, 0.5]  # gold, list: the first walk's best two
    seeds = bridge_seeds(mass, view.passage_vertices, view.mentions, view.passage_count, passages=2, k=5)
    names = {projection.record_ids[v]: w for v, w in seeds.items()}
    # "seed" and "topic" appear in gold only: they lead nowhere; the hubs lead to the fillers.
    assert set(names) == {"hub-0", "hub-1", "hub-2"}
    assert max(names.values()) == pytest.approx(1.0)


def test_anchored_facts_are_about_what_the_query_names_and_all_stay_when_none_is():
    ends = [[10, 11], [12, 13], [14, 10], [15, 16]]
    rows = [100, 101, 102, 103]
    # Entity 10 is linked from a query phrase; fact row 103 was read from a page the query names by title.
    assert anchored_facts(ends, rows, named_entities={10}, named_facts={103}) == [0, 2, 3]
    assert anchored_facts(ends, rows, named_entities={99}, named_facts=set()) == [0, 1, 2, 3]
    assert anchored_facts([], [], named_entities={10}, named_facts=set()) == []


def test_the_fact_led_bridge_follows_the_fact_the_question_asks_about():
    # Passage 0 (the first walk's best) mentions a director (1) and a studio (2), both on two pages;
    # only the fact naming the director is close to the question.
    mentions = {0: np.array([1, 2, 3])}
    passage_count = np.array([0, 2, 2, 1])
    fact_ends = {7: [3, 1], 8: [3, 2]}
    relevance = fact_relevance(np.array([7, 8]), np.array([0.8, -0.2]), fact_ends.__getitem__)
    assert relevance == {3: 0.8, 1: 0.8, 2: 0.0}
    args = (np.array([1.0]), np.array([0]), mentions.__getitem__, passage_count)
    assert bridge_seeds(*args, passages=1, k=5) == {1: 1.0, 2: 1.0}  # by mentions: a tie
    # By facts: the director leads on, the studio no fact asks about does not; the page entity (3,
    # on one page only) still leads nowhere.
    assert bridge_seeds(*args, passages=1, k=5, relevance=lambda p: relevance) == {1: 1.0}


def test_title_matches_need_the_words_in_order_and_a_name_for_one_word_titles():
    titles = TitleIndex()
    for vertex, title in enumerate(["Emile the African", "Midnight Court (film)", "Adolescence", "Brand (play)",
                                    "Brand (film)", "Hello Love (song)", "Love"]):
        titles.add(vertex, title)
    assert titles.matches("Where did the director of film Emile The African die?") == {0: ("emile", "the", "african")}
    assert set(titles.matches("Were Target Zero and Midnight Court made in one country?")) == {1}
    assert titles.matches("What happens during adolescence?") == {}  # a common word, not a name
    assert set(titles.matches("Where did Hello Love's performer live?")) == {5}  # not "Love" inside it
    seeds = title_seeds(titles, "Who wrote Brand?", np.ones(7, dtype=bool))
    assert seeds == {3: 0.5, 4: 0.5}  # a shared name splits its weight
    hidden = np.ones(7, dtype=bool)
    hidden[3] = False
    assert title_seeds(titles, "Who wrote Brand?", hidden) == {4: 1.0}


def test_a_saved_title_index_matches_as_before_and_takes_new_titles():
    titles = TitleIndex()
    for vertex, title in enumerate(["Brand (play)", "Midnight Court (film)", "Brand (film)"]):
        titles.add(vertex, title)
    loaded = TitleIndex.from_arrays(titles.arrays())
    assert loaded.matches("Who wrote Brand?") == titles.matches("Who wrote Brand?") == {0: ("brand",), 2: ("brand",)}
    loaded.add(7, "Brand")  # a key saved before gets a vertex; a new key gets its number
    loaded.add(8, "Target Zero Returns (novel)")
    again = TitleIndex.from_arrays(loaded.arrays())
    for index in (loaded, again):
        assert set(index.matches("Who wrote Brand?")) == {0, 2, 7}
        assert index.matches("Is Target Zero Returns a novel?") == {8: ("target", "zero", "returns")}
        assert set(index.matches("Was Midnight Court (film) shot in Brand?")) == {1, 0, 2, 7}
    assert len(again) == len(loaded) == 7  # each title in full and without its "(...)", "brand" once


@pytest.mark.parametrize(("question", "anchor", "relations", "hop"), [
    ("Where was the place of death of the director of film Emile The African?", "film Emile The African",
     ["place of death", "director"], "director of film Emile The African"),
    ("Which country the director of film Ladies Should Listen is from?", "film Ladies Should Listen",
     ["director"], "director of film Ladies Should Listen"),
    ("When did the father of Hugh Despenser die?", "Hugh Despenser", ["father"], "father of Hugh Despenser"),
])
def test_relation_chains_of_compositional_questions(question, anchor, relations, hop):
    chain = parse_chain(load_pipeline()(question))
    assert chain is not None
    assert (chain.anchor, chain.relations, chain.first_hop) == (anchor, relations, hop)


@pytest.mark.parametrize("question", ["Who is Princess Adrienne, Duchess Of Blekinge's mother?",
                                      "What is the waterfall in the country where the Bubye River is found?"])
def test_questions_without_an_of_chain_have_none(question):
    assert parse_chain(load_pipeline()(question)) is None


class _NoFallback:
    name = "no-fallback"

    def extract(self, passages: list[Passage]) -> list[Extraction]:
        raise AssertionError(f"fell back to another extractor for {[p.text[:30] for p in passages]}")


def test_openie_import_matches_the_chunks_of_a_long_paragraph(tmp_path):
    sentences = [f"Alpha{i} was founded by Beta{i} in the year {1900 + i} near the old river mill." for i in range(12)]
    paragraph = " ".join(sentences)
    triples = [[f"Alpha{i}", "founded by", f"Beta{i}"] for i in range(12)] + [["Gamma", "rules", "Delta"]]
    path = tmp_path / "openie.json"
    path.write_text(json.dumps({"docs": [{"title": "Alpha", "text": paragraph, "extracted_entities": ["Alpha0"],
                                          "extracted_triples": triples}]}), encoding="utf-8")
    settings = Settings(passage_chars=300)
    _, passages = split_documents(validate_documents([{"title": "Alpha", "text": paragraph}], settings), settings)
    assert len(paragraph) > settings.passage_chars and len(passages) > 2
    importer = OpenIEImport.from_file(path, fallback=_NoFallback())
    extractions = importer.extract(passages)
    assert importer.missed == 0 and importer.chunks == len(passages)
    found = [{(t.subject, t.object) for t in e.triples} for e in extractions]
    for passage, pairs in zip(passages, found, strict=True):
        assert pairs, "every chunk gets triples"
        assert all(s in passage.text for s, _ in pairs - {("Gamma", "Delta")})  # only what it names
    assert set().union(*found) >= {(f"Alpha{i}", f"Beta{i}") for i in range(12)}
    assert ("Gamma", "Delta") in found[0]  # named nowhere: kept, with the first chunk
    assert all(e.entities[0].name == "Alpha" for e in extractions)  # the title is each chunk's entity


def test_the_bridge_hop_lifts_the_page_of_the_entity_the_named_page_mentions(embedder):
    corpus = [
        {"title": "Emile the African", "text": "Emile the African is a 1949 French comedy film directed by "
                                               "Robert Vernay and starring Fernandel."},
        {"title": "Robert Vernay", "text": "Robert Vernay was a screenwriter. He died in Paris in 1979."},
        {"title": "Jean Dréville", "text": "Jean Dréville was a French film director who died in Vallangoujard."},
        {"title": "Marcel Carné", "text": "Marcel Carné was a French film director of comedies. He died in Clamart."},
        {"title": "Fernandel", "text": "Fernandel was a French actor and singer from Marseille."},
    ]
    question = "Where did the director of film Emile The African die?"
    with Memory.open(":memory:", embedder=embedder, extractor=SpacyExtractor()) as memory:
        memory.index(corpus)

        def share_of_best(**settings) -> tuple[str, float]:
            hits = Memory(memory.store, settings=Settings(**settings), embedder=embedder).recall(question, k=5).hits
            scores = {h.title: h.score for h in hits}
            return hits[0].title, scores["Robert Vernay"] / hits[0].score

        first, with_bridge = share_of_best()
        first_without, without_bridge = share_of_best(bridge_weight=0.0)
    assert first == first_without == "Emile the African"
    # The second walk restarts at Robert Vernay (named by the top passage, and by one other).
    assert with_bridge > 1.5 * without_bridge


def test_anchored_recall_keeps_only_the_facts_about_what_the_question_names(embedder):
    corpus = [
        {"title": "Signmark", "text": "Signmark is a Finnish rapper. Signmark was born in Helsinki, Finland."},
        {"title": "Greece", "text": "Greece adopted the Euro as its currency in 2001."},
        {"title": "Finnish markka", "text": "The Finnish markka was the currency of Finland until the Euro "
                                            "replaced it in 2002."},
    ]
    question = "What currency predated the Euro in the country Signmark is from?"
    with Memory.open(":memory:", embedder=embedder, extractor=SpacyExtractor()) as memory:
        memory.index(corpus)

        def fact_clues(**settings) -> list[str]:
            result = Memory(memory.store, settings=Settings(**settings), embedder=embedder).recall(question, k=3)
            return [c.query for c in result.clues if c.kind == "fact"]

        anchored, unanchored = fact_clues(), fact_clues(fact_anchor=False)
        both_bridges = {h.title for h in Memory(memory.store, settings=Settings(bridge_source="facts"),
                                                embedder=embedder).recall(question, k=3).hits}
    # The query links "Signmark" and "Euro": kept facts name one of them; the rest were retrieved by words.
    assert anchored and all("Euro" in f or "Signmark" in f for f in anchored)
    assert any("Euro" not in f and "Signmark" not in f for f in unanchored)
    assert both_bridges == {"Signmark", "Greece", "Finnish markka"}  # the fact-led bridge runs end to end
