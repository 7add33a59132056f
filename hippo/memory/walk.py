"""Walks a caller steers: PPR from explicit seed ids, and the neighbourhood around seeds.

``Memory.recall`` chooses its own seeds from a query; a client fanning clues
out over the ``graph`` method names them instead (the seed ids recall
returned, or any entity id). From the seeds on, the path is recall's own
(``hippo.memory.spread``), read through the reader's ``RecallSource`` (the derived
state in process, Neo4j in store-side read mode):
passages outside ``spaces`` have no edges there, so no walk reaches them, no
hidden entity counts as a seed, and an id the reader may not see is treated
exactly like an id that does not exist.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from hippo.config import Settings
from hippo.graph.edges import KIND_NAMES
from hippo.memory.core import Engine
from hippo.memory.hits import assemble_hits, read_passages
from hippo.memory.source import RecallSource
from hippo.memory.spread import passage_mass, ranking, spread
from hippo.models import GraphEdge, GraphNode, Hit, Neighborhood, Passage, Provenance
from hippo.store import Store
from hippo.store.base import Spaces

MAX_HOPS = 3
PATH_BUDGET = 200_000  # vertices a provenance search may visit before it gives up
T = TypeVar("T")


@dataclass(frozen=True)
class ViewRecords:
    """What one reader's view holds: entities with a visible passage, facts read from one."""

    entity_ids: list[str]
    fact_ids: list[str]


def _reads(walk: Callable[..., T]) -> Callable[..., T]:
    """Run a walk inside the engine's read section: a write's in-place update waits for it."""
    @functools.wraps(walk)
    def guarded(engine: Engine, *args: Any, **kwargs: Any) -> T:
        with engine.reading():
            return walk(engine, *args, **kwargs)
    return guarded


@_reads
def graph_spaces(engine: Engine) -> frozenset[str]:
    """Every space that holds a live passage of the graph."""
    return engine.state.projection.live_spaces()


def _way_back(source: RecallSource, start: int, seeds: set[int]) -> list[int]:
    """The shortest way from a seed to ``start`` (seed first, ``start`` left out); among
    equally short ways the smallest by record ids, never by node handles. Breadth-first
    over the reader's edges; empty when no seed is within ``PATH_BUDGET`` nodes."""
    parents: dict[int, set[int]] = {start: set()}
    frontier = np.array([start], dtype=np.int64)
    reached: list[int] = []
    while len(frontier) and not reached and len(parents) < PATH_BUDGET:
        owners, columns = source.edges(frontier)
        layer: dict[int, set[int]] = {}
        for owner, target in zip(owners.tolist(), columns["targets"].tolist(), strict=True):
            if target not in parents:
                layer.setdefault(target, set()).add(int(frontier[owner]))
        parents.update(layer)
        reached = [v for v in layer if v in seeds]
        frontier = np.fromiter(layer, dtype=np.int64, count=len(layer))
    if not reached:
        return []

    def smallest(nodes: Iterable[int]) -> int:
        nodes = list(nodes)
        return min(zip(source.record_ids(nodes), nodes, strict=True))[1]

    way = [smallest(reached)]
    while True:
        before = parents[way[-1]]
        if not before or start in before:
            return way
        way.append(smallest(before))


def seed_walk(source: RecallSource, store: Store, settings: Settings, seed_weights: Mapping[str, float], *,
              k: int, token_budget: int | None = None) -> list[Hit]:
    """Passages ranked by the PPR mass flowing from the given seeds.

    Weights are relative (the reset vector is normalized); unknown or hidden
    seed ids are left out, and with none left the result is empty. Each hit's
    provenance names the seeds it mentions (or, when the walk took more hops,
    the shortest way there: a seed, then the nodes between) and its facts that
    touch a seed.
    """
    vertices = source.nodes(list(seed_weights))
    weights = [max(float(seed_weights[sid]), 0.0) for sid in vertices]
    if not vertices or sum(weights) <= 0 or not source.passage_total:
        return []
    passage_vertices, mass = passage_mass(source, np.array(list(vertices.values()), dtype=np.int64),
                                          np.array(weights, dtype=np.float64), settings)
    ranked = ranking(source, passage_vertices, mass, max(k * 4, 50), reached_only=True)
    node_of = source.nodes([pid for pid, _ in ranked])

    seed_of_vertex = {v: sid for sid, v in vertices.items()}
    facts_by_passage: dict[str, list[str]] = {}
    passages = read_passages(store)

    def read(pids: list[str]) -> dict[str, Passage]:  # with the facts of these passages that touch a seed
        for fact in store.facts([fid for pid in pids for fid in source.passage_facts(node_of[pid])]):
            if fact.subject_id in vertices or fact.object_id in vertices:
                facts_by_passage.setdefault(fact.passage_id, []).append(fact.id)
        return passages(pids)

    def provenance(pid: str) -> Provenance:
        v = node_of[pid]
        mentioned = source.mentions(v).tolist()
        # Seeds by weight, then id; ties never by node handle (hidden records shift those).
        nodes = sorted((seed_of_vertex[u] for u in mentioned if u in seed_of_vertex),
                       key=lambda sid: (-float(seed_weights[sid]), sid))
        if v in seed_of_vertex:
            nodes.insert(0, seed_of_vertex[v])
        if not nodes:  # reached in more hops: the shortest way from a seed, seed first
            nodes = source.record_ids(_way_back(source, v, set(seed_of_vertex)))
        return Provenance(nodes=nodes, facts=facts_by_passage.get(pid, []))

    scores = dict(ranked)
    return assemble_hits(ranked, read, k=k, token_budget=token_budget,
                         stage_scores=lambda pid: {"ppr": round(scores[pid], 8)}, provenance=provenance)


def neighbors(source: RecallSource, store: Store, settings: Settings, seed_ids: Iterable[str], *, hops: int = 1,
              limit: int = 50) -> Neighborhood:
    """The nodes within ``hops`` edges of the seeds and the weighted edges between them.

    Hubs make a neighbourhood explode (an entity in a thousand passages), so
    nodes are ranked by the PPR mass flowing from the seeds and the ``limit``
    best are kept, seeds always among them. Parallel edges of one kind (the
    same relation read from several passages) are summed into one.
    """
    if not 1 <= hops <= MAX_HOPS:
        raise ValueError(f"hops must be from 1 to {MAX_HOPS}")
    seeds = source.nodes(list(seed_ids))
    if not seeds:
        return Neighborhood(seeds=[], nodes=[], edges=[])
    reached = set(seeds.values())
    frontier = np.array(sorted(reached), dtype=np.int64)
    for _ in range(hops):
        _, columns = source.edges(frontier)
        fresh = set(columns["targets"].tolist()) - reached
        reached |= fresh
        frontier = np.fromiter(fresh, dtype=np.int64, count=len(fresh))

    ppr = spread(source, np.array(list(seeds.values()), dtype=np.int64), np.ones(len(seeds)), settings)
    mass = dict(zip(ppr.vertices.tolist(), ppr.scores.tolist(), strict=True))
    seed_vertices = set(seeds.values())
    # Ties go by record id, never by node handle: hidden records shift node handles.
    ids = dict(zip(reached, source.record_ids(list(reached)), strict=True))
    others = sorted(reached - seed_vertices, key=lambda v: (-mass.get(v, 0.0), ids[v]))
    kept = sorted(seed_vertices, key=lambda v: (-mass.get(v, 0.0), ids[v])) + \
        others[: max(0, limit - len(seed_vertices))]

    kept_set = set(kept)
    is_passage = {v: source.is_passage(v) for v in kept}
    names = source.entity_names([ids[v] for v in kept if not is_passage[v]])
    names.update({p.id: p.title for p in store.passages([ids[v] for v in kept if is_passage[v]])})
    nodes = [GraphNode(id=ids[v], kind="passage" if is_passage[v] else "entity", name=names.get(ids[v], ""),
                       score=round(mass.get(v, 0.0), 8), seed=v in seed_vertices) for v in kept]

    weights: dict[tuple[str, str, str], float] = {}
    owners, columns = source.edges(np.array(kept, dtype=np.int64))
    for owner, target, kind, weight in zip(owners.tolist(), columns["targets"].tolist(), columns["kinds"].tolist(),
                                           columns["weights"].tolist(), strict=True):
        source_node = kept[owner]
        if target in kept_set and source_node < target:  # each edge is an entry at both of its ends
            a, b = sorted((ids[source_node], ids[target]))
            key = (a, b, KIND_NAMES[kind])
            weights[key] = weights.get(key, 0.0) + float(weight)
    edges = [GraphEdge(src=a, dst=b, kind=kind, weight=round(w, 6)) for (a, b, kind), w in sorted(weights.items())]
    return Neighborhood(seeds=list(seeds), nodes=nodes, edges=edges)


def view_records(engine: Engine, spaces: Spaces) -> ViewRecords:
    """Ids of the entities and facts a reader of ``spaces`` can reach, each in store order (in
    store-side read mode read from the store, ``read_view_records.cypher``)."""
    if engine.store_reads is not None:
        entity_ids, fact_ids = engine.store.reader(spaces).view_records()  # type: ignore[attr-defined]
        return ViewRecords(entity_ids=entity_ids, fact_ids=fact_ids)
    return _view_records(engine, spaces)


@_reads
def _view_records(engine: Engine, spaces: Spaces) -> ViewRecords:
    state = engine.state
    p = state.projection
    view = p.view(spaces)
    entities = np.flatnonzero(~p.is_passage.values)
    entities = entities[view.passage_count[entities] > 0]
    rows = np.flatnonzero(view.visible_passage[p.fact_passage.values]) if len(p.fact_ids) else np.zeros(0, int)
    return ViewRecords(entity_ids=[p.record_ids[v] for v in entities.tolist()],
                       fact_ids=p.fact_ids.take(rows))
