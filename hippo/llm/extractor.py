"""HippoRAG's two-step OpenIE by an LLM: named entities, then triples conditioned on them.

Answers are cached by (passage text, model, prompt version) in the store's
key-value area, so re-indexing the same text (another document id, a rebuilt
graph, a resumed run) never pays twice. A passage whose answer cannot be
read, or whose calls run out of retries, falls back to spaCy and is listed in
``fallbacks``; the rest of the batch keeps its LLM triples. Only a refused
key or model stops indexing: every call would fail the same way.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hippo.extract.base import Extraction, Extractor, NamedEntity, Triple
from hippo.ids import text_hash
from hippo.llm.client import LLMClient, LLMConfigError, LLMError, LLMUnavailable
from hippo.llm.jsonparse import ParseError, parse_entities, parse_triples
from hippo.llm.prompts import NER_SCHEMA, PROMPT_VERSION, TRIPLES_SCHEMA, ner_messages, triples_messages
from hippo.llm.usage import Usage
from hippo.models import Passage
from hippo.text import normalize

log = logging.getLogger(__name__)

CACHE_NAMESPACE = "llm-openie"


class ExtractionCache(Protocol):
    def get(self, keys: list[str]) -> dict[str, Extraction]: ...

    def put(self, items: Mapping[str, Extraction]) -> None: ...


class KeyValues(Protocol):
    """The part of the store protocol the cache needs."""

    def get_values(self, namespace: str, keys: Iterable[str]) -> dict[str, str]: ...

    def put_values(self, namespace: str, items: Mapping[str, str | None]) -> None: ...


def _encode(extraction: Extraction) -> str:
    return json.dumps({"e": [e.name for e in extraction.entities],
                       "t": [[t.subject, t.predicate, t.object] for t in extraction.triples]},
                      ensure_ascii=False, separators=(",", ":"))


def _decode(raw: str) -> Extraction | None:
    try:
        data = json.loads(raw)
        return Extraction(entities=[NamedEntity(name=n) for n in data["e"]],
                          triples=[Triple(subject=s, predicate=p, object=o) for s, p, o in data["t"]])
    except (ValueError, KeyError, TypeError):
        return None  # a damaged entry is a miss, not an error


class StoreExtractionCache:
    """LLM extractions in the store's key-value area (namespace ``llm-openie``)."""

    def __init__(self, store: KeyValues, namespace: str = CACHE_NAMESPACE) -> None:
        self._store = store
        self.namespace = namespace

    def get(self, keys: list[str]) -> dict[str, Extraction]:
        found = {}
        for key, raw in self._store.get_values(self.namespace, keys).items():
            if (extraction := _decode(raw)) is not None:
                found[key] = extraction
        return found

    def put(self, items: Mapping[str, Extraction]) -> None:
        if items:
            self._store.put_values(self.namespace, {key: _encode(e) for key, e in items.items()})


def cache_key(text: str, model: str, prompt_version: str = PROMPT_VERSION) -> str:
    return f"{prompt_version}:{model}:{text_hash(text)}"


@dataclass
class _Outcome:
    extraction: Extraction | None = None
    error: BaseException | None = None


class LLMExtractor:
    """An ``Extractor`` backed by an OpenAI-compatible model, with a spaCy fallback per passage.

    ``fallbacks`` lists the ids of passages that fell back (all calls so far);
    ``usage`` counts calls and tokens by stage (``ner``, ``triples``).
    """

    def __init__(self, client: LLMClient, *, fallback: Extractor, cache: ExtractionCache | None = None,
                 breaker: int | None = None) -> None:
        self.client = client
        self.name = f"llm:{client.name}:{PROMPT_VERSION}"
        self.fallback = fallback
        self.cache = cache
        self.usage = Usage()
        self.fallbacks: list[str] = []
        self.cache_hits = 0
        self.extracted = 0
        # After this many passages in a row lose their calls to an unreachable endpoint, the rest
        # of the call falls back at once instead of waiting out every retry.
        self._breaker = breaker or max(4, 2 * client.config.concurrency)
        self._lock = threading.Lock()

    # -- Extractor -----------------------------------------------------------------------

    def extract(self, passages: list[Passage]) -> list[Extraction]:
        keys = [cache_key(p.embed_text, self.client.name) for p in passages]
        cached = self.cache.get(list(dict.fromkeys(keys))) if self.cache and passages else {}
        todo = [i for i, key in enumerate(keys) if key not in cached]
        self.cache_hits += len(passages) - len(todo)

        down = _Breaker(self._breaker)
        outcomes = self.client.map(lambda i: self._extract_one(passages[i], down), todo)
        fresh: dict[str, Extraction] = {}
        failed: list[int] = []
        config_error: LLMConfigError | None = None
        for i, outcome in zip(todo, outcomes, strict=True):
            if isinstance(outcome, Extraction):
                fresh[keys[i]] = outcome
            elif isinstance(outcome, LLMConfigError):
                config_error = outcome
            else:
                failed.append(i)
                log.warning("LLM extraction of %s fell back to %s: %s", passages[i].id, self.fallback.name,
                            outcome)
        if self.cache is not None:
            self.cache.put(fresh)  # before any raise: answers paid for are kept
        if config_error is not None:
            raise config_error
        by_key = {**cached, **fresh}
        results: list[Extraction | None] = [by_key.get(key) for key in keys]
        if failed:
            for i, extraction in zip(failed, self.fallback.extract([passages[i] for i in failed]), strict=True):
                results[i] = extraction
            with self._lock:
                self.fallbacks.extend(passages[i].id for i in failed)
        with self._lock:
            self.extracted += len(fresh)
        spacy_read = set(failed)
        return [result if i in spacy_read else self._with_title(passages[i], result)  # type: ignore[arg-type]
                for i, result in enumerate(results)]

    @staticmethod
    def _with_title(passage: Passage, extraction: Extraction) -> Extraction:
        """The title is an entity of its passage, as with spaCy and the OpenIE importer."""
        if not passage.title:
            return extraction
        return Extraction(entities=[NamedEntity(name=passage.title, type="TITLE"), *extraction.entities],
                          triples=extraction.triples)

    def _extract_one(self, passage: Passage, down: _Breaker) -> Extraction | BaseException:
        if down.is_open():
            return LLMUnavailable("endpoint unreachable: skipped after repeated failures")
        text = passage.embed_text
        try:
            ner = self.client.complete("ner", ner_messages(text), schema=NER_SCHEMA, usage=self.usage)
            entities = grounded_entities(parse_entities(ner.text), text)
            answer = self.client.complete("triples", triples_messages(text, entities), schema=TRIPLES_SCHEMA,
                                          usage=self.usage)
            triples, dropped = parse_triples(answer.text)
            if dropped and not triples:
                raise ParseError(f"none of the {dropped} triples is [subject, predicate, object]")
            if triples and not grounded_triples(relational(triples, entities)[0], text)[0]:
                # Kept whole otherwise, like the NER answer: GPT-3.5's recorded answers give HippoRAG's graph.
                raise ParseError(f"none of the {len(triples)} triples relates something the passage names")
        except LLMUnavailable as exc:
            down.failed()
            return exc
        except ParseError as exc:
            self.usage.add("parse", failures=1)
            return exc
        except LLMError as exc:
            return exc
        down.succeeded()
        if dropped:
            self.usage.add("triples", malformed=dropped)
        return Extraction(entities=[NamedEntity(name=n) for n in entities],
                          triples=[Triple(subject=s, predicate=p, object=o) for s, p, o in triples])

    # -- reporting ------------------------------------------------------------------------

    def mark(self) -> dict[str, Any]:
        with self._lock:
            return {"usage": self.usage.mark(), "fallbacks": len(self.fallbacks), "cache_hits": self.cache_hits,
                    "extracted": self.extracted}

    def report(self, since: dict[str, Any] | None = None) -> dict[str, Any]:
        """What indexing cost since ``mark()``: per-stage calls and tokens, totals, cache hits,
        passages extracted by the LLM, and the passages that fell back to spaCy."""
        since = since or {"usage": {}, "fallbacks": 0, "cache_hits": 0, "extracted": 0}
        stages = self.usage.since(since["usage"])
        with self._lock:
            fallbacks = self.fallbacks[since["fallbacks"]:]
            hits, extracted = self.cache_hits - since["cache_hits"], self.extracted - since["extracted"]
        return {"model": self.client.name, "prompt_version": PROMPT_VERSION, "json_mode": self.client.json_level,
                "stages": stages, "total": Usage.totals(stages), "llm_passages": extracted,
                "cache_hits": hits, "fallbacks": fallbacks}


def relational(triples: list[tuple[str, str, str]], entities: list[str]) -> tuple[list[tuple[str, str, str]], int]:
    """The triples whose predicate is not one of the passage's named entities, and how many were not.

    A name is not a relation: held to three strings by a decoding grammar, Gemma 3 270M wrote
    entity trios such as ["Hank Snow", "Yodeling Ranger", "Songwriter"], each a triple in shape
    only, and would tie the three names with a fact that says nothing.
    """
    names = {key for n in entities if (key := normalize(n))}
    kept = [t for t in triples if normalize(t[1]) not in names]
    return kept, len(triples) - len(kept)


def grounded_triples(triples: list[tuple[str, str, str]], passage: str) -> tuple[list[tuple[str, str, str]], int]:
    """The triples whose subject or object occurs in the passage, and how many did not.

    Gemma 3 270M copied the prompt's one-shot example ("Church of the Good Shepherd
    was built on shore of Lake Tekapo") into passages that never name either. One
    end is enough, as HippoRAG keeps GPT's paraphrased objects.
    """
    named = _named_in(passage)
    kept = [t for t in triples if named(t[0]) or named(t[2])]
    return kept, len(triples) - len(kept)


def _named_in(passage: str) -> Callable[[str], bool]:
    """Whether a name occurs in the passage, as whole words of normalized text."""
    haystack = f" {normalize(passage)} "
    return lambda name: bool(key := normalize(name)) and f" {key} " in haystack


def grounded_entities(names: list[str], passage: str) -> list[str]:
    """The NER answer, refused when not one of its names occurs in the passage.

    Small models answer about something else: for a passage on the Journal of
    Psychotherapy Integration, Gemma 3 270M listed "Adolescence", "Psychology",
    "Gender", "Identity"; each would become a node tying unrelated passages
    together. Such an answer is unreadable (the passage falls back to spaCy).
    Names are compared as normalized text; an answer with at least one name in
    the passage is kept whole, as HippoRAG keeps GPT's (which may paraphrase).
    """
    named = _named_in(passage)
    if names and not any(named(n) for n in names):
        raise ParseError(f"none of the {len(names)} named entities occurs in the passage")
    return names


class _Breaker:
    """Consecutive passages lost to an unreachable endpoint, within one ``extract`` call."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._failures = 0
        self._lock = threading.Lock()

    def failed(self) -> None:
        with self._lock:
            self._failures += 1

    def succeeded(self) -> None:
        with self._lock:
            self._failures = 0

    def is_open(self) -> bool:
        with self._lock:
            return self._failures >= self._limit


def usage_meter(extractor: Extractor) -> Callable[[], dict[str, Any] | None]:
    """For ``Memory.index``: a function giving the extractor's LLM usage since now (None offline)."""
    if not isinstance(extractor, LLMExtractor):
        return lambda: None
    mark = extractor.mark()
    return lambda: extractor.report(since=mark)
