"""A synthetic corpus of HippoRAG's shape, for measuring the engine at sizes no real set has here.

Only the text, its triples and its vectors are made up; everything else runs
through the engine's own code (``Memory.index`` with an ``Extractor`` and an
``Embedder`` that read the synthetic text, then ``Memory.recall``).

- Entities are families of spelling variants (``E123v0``, ``E123v1``): a
  family belongs to one of ``topics`` topics, and its variants' vectors are
  close (cosine ~0.85, above the synonym threshold), so synonym edges come
  from the engine's own kNN linking.
- A passage has a topic; its ``mentions`` entities are drawn Zipf-distributed,
  mostly from its topic's families (a few hubs in many passages, a long tail
  in one), its ``facts`` triples ("E12v0 r5 E7v1.") join pairs of them, and
  ``words`` filler words (Zipf over ``vocabulary``) give BM25 something to read.
- Vectors (384-d, unit length) are clustered: topic centre + family + variant
  for an entity; the mean of its entities for a passage or fact; the same for a
  query, which names two entities of one passage. Their variance decays over
  the dimensions as real embeddings' does (see ``_unit``).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from hippo.extract.base import Extraction, NamedEntity, Triple
from hippo.models import Passage

NAME = re.compile(r"\b[Ee](\d+)v(\d)\b")
NAME_TOKEN = re.compile(r"\bE\d+v\d\b")
TRIPLE = re.compile(r"\b(E\d+v\d) (r\d+) (E\d+v\d)\.")
TABLE = 1 << 13  # random unit vectors looked up by hash: no per-name state
CENTRE, FAMILY, VARIANT = np.sqrt(0.30), np.sqrt(0.55), np.sqrt(0.15)  # within a family: cosine ~0.85
SPECTRUM = 0.45  # standard deviation of dimension i ~ i^-0.45


@dataclass(frozen=True)
class Shape:
    mentions: int = 12  # distinct entities per passage
    facts: int = 10  # triples per passage
    families_per_passage: float = 1.5  # entity families in the vocabulary, per passage
    topics: int = 997
    local: float = 0.8  # share of a passage's entities from its own topic
    variant: float = 0.3  # chance an entity is named by a spelling other than the family's first
    zipf: float = 1.0
    words: int = 40
    vocabulary: int = 50_000
    predicates: int = 200


def _unit(rng: np.random.Generator, rows: int, dim: int) -> np.ndarray:
    """Random unit vectors whose variance decays over the dimensions (i^-0.9), as text embeddings'
    does: MiniLM's vectors of MuSiQue hold 50/80/90 % of their variance in 51/138/196 components,
    these in ~25/140/235, where isotropic ones would need 190/305/345 (and be far harder to search)."""
    scale = np.arange(1, dim + 1, dtype=np.float32) ** -SPECTRUM
    matrix = rng.standard_normal((rows, dim)).astype(np.float32) * scale
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _zipf_cdf(size: int, exponent: float) -> np.ndarray:
    cdf = np.cumsum(1.0 / np.arange(1, size + 1) ** exponent)
    return cdf / cdf[-1]


class SyntheticCorpus:
    """Documents ``0 .. passages - 1``, each one passage, generated on demand and reproducibly."""

    def __init__(self, passages: int, shape: Shape = Shape(), seed: int = 13) -> None:
        self.passages, self.shape, self.seed = passages, shape, seed
        self.families = max(shape.topics * 4, int(passages * shape.families_per_passage))
        per_topic = self.families // shape.topics
        self._local = _zipf_cdf(per_topic, shape.zipf)
        self._global = _zipf_cdf(self.families, shape.zipf)
        self._words = _zipf_cdf(shape.vocabulary, shape.zipf)
        self._predicates = _zipf_cdf(shape.predicates, shape.zipf)
        self._per_topic = per_topic

    def _draw(self, rng: np.random.Generator, cdf: np.ndarray, size: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, rng.random(size)), len(cdf) - 1)

    def entities_of(self, i: int) -> tuple[np.random.Generator, list[str]]:
        s = self.shape
        rng = np.random.default_rng((self.seed, i))
        topic = int(rng.integers(s.topics))
        names: dict[str, None] = {}
        while len(names) < s.mentions:
            n = 2 * s.mentions
            local = rng.random(n) < s.local
            families = np.where(local, topic + s.topics * self._draw(rng, self._local, n),
                                self._draw(rng, self._global, n))
            variants = np.where(rng.random(n) < s.variant, rng.integers(1, 3, n), 0)
            for family, variant in zip(families.tolist(), variants.tolist(), strict=True):
                names.setdefault(f"E{family}v{variant}")
        return rng, list(names)[: s.mentions]

    def document(self, i: int) -> dict[str, str]:
        s = self.shape
        rng, names = self.entities_of(i)
        ends = rng.integers(len(names), size=(4 * s.facts, 2))
        pairs = list(dict.fromkeys((int(a), int(b)) for a, b in ends if a != b))[: s.facts]
        predicates = self._draw(rng, self._predicates, len(pairs))
        facts = " ".join(f"{names[a]} r{p} {names[b]}." for (a, b), p in zip(pairs, predicates.tolist(),
                                                                             strict=True))
        words = " ".join(f"w{w}" for w in self._draw(rng, self._words, s.words).tolist())
        return {"id": f"doc:s{i}", "title": f"Doc {i}", "text": f"{facts} {words}"}

    def documents(self, start: int, stop: int) -> list[dict[str, str]]:
        return [self.document(i) for i in range(start, min(stop, self.passages))]

    def query(self, i: int) -> str:
        """A question naming two entities of passage ``i`` (a fact's two ends)."""
        text = self.document(i)["text"]
        subject, _, obj = TRIPLE.search(text).groups()
        return f"What links {subject} to {obj} w7?"


class SyntheticExtractor:
    """Reads the triples and names back out of the synthetic text (the engine's extractor interface)."""

    name = "synthetic"

    def extract(self, passages: list[Passage]) -> list[Extraction]:
        out = []
        for p in passages:
            triples = [Triple(subject=a, predicate=r, object=b) for a, r, b in TRIPLE.findall(p.text)]
            names = dict.fromkeys(m.group(0) for m in NAME_TOKEN.finditer(p.text))
            out.append(Extraction(entities=[NamedEntity(name=n, type="ORG") for n in names], triples=triples))
        return out


def query_phrases(query: str) -> list[str]:
    """What spaCy would find in a question about synthetic names: the names."""
    return list(dict.fromkeys(m.group(0) for m in NAME_TOKEN.finditer(query)))


class SyntheticEmbedder:
    """Clustered unit vectors from the names a text holds; deterministic, no model."""

    def __init__(self, dim: int = 384, topics: int = Shape().topics, seed: int = 7) -> None:
        self.dim, self.topics = dim, topics
        self.name = f"synthetic-{dim}"
        rng = np.random.default_rng(seed)
        self._centres = _unit(rng, topics, dim)
        self._families = _unit(rng, TABLE, dim)
        self._variants = _unit(rng, TABLE, dim)
        self._noise = _unit(rng, TABLE, dim)

    def entity_vectors(self, families: np.ndarray, variants: np.ndarray) -> np.ndarray:
        mix = (CENTRE * self._centres[families % self.topics]
               + FAMILY * self._families[(families * 2_654_435_761) % TABLE]
               + VARIANT * self._variants[(families * 40_503 + variants * 9_973) % TABLE])
        return mix / np.linalg.norm(mix, axis=1, keepdims=True)

    def encode(self, texts: list[str]) -> np.ndarray:
        owners, families, variants = [], [], []
        for row, text in enumerate(texts):
            for family, variant in NAME.findall(text):
                owners.append(row)
                families.append(int(family))
                variants.append(int(variant))
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        noise = np.array([zlib.crc32(t.encode("utf-8")) % TABLE for t in texts], dtype=np.int64)
        out = 0.05 * self._noise[noise]
        if owners:
            vectors = self.entity_vectors(np.array(families, dtype=np.int64), np.array(variants, dtype=np.int64))
            rows = sparse.csr_matrix((np.ones(len(owners), np.float32), (owners, np.arange(len(owners)))),
                                     shape=(len(texts), len(owners)))
            out = out + rows @ vectors
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)
