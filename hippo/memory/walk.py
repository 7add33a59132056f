"""Walks a caller steers: PPR from explicit seed ids, and the neighbourhood around seeds.

``Memory.recall`` chooses its own seeds from a query; a client fanning clues
out over the ``graph`` method names them instead (the seed ids recall
returned, or any entity id). Everything here runs on the reader's view,
``state.projection.view(spaces)``: passages outside ``spaces`` have no edges
there, so no walk reaches them, no hidden entity counts as a seed, and an id
the reader may not see is treated exactly like an id that does not exist.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from hippo.graph.edges import KIND_NAMES
from hippo.graph.scoring import top_indices
from hippo.graph.view import GraphView
from hippo.memory.core import Engine
from hippo.memory.hits import assemble_hits
from hippo.memory.names import visible_names
from hippo.models import GraphEdge, GraphNode, Hit, Neighborhood, Provenance
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


def _visible(view: GraphView, v: int) -> bool:
    return bool(view.visible(np.array([v]))[0])


def _pagerank(engine: Engine, view: GraphView, vertices: list[int], weights: list[float]):  # noqa: ANN202
    s = engine.settings
    return view.pagerank(np.array(vertices, dtype=np.int64), np.array(weights, dtype=np.float64), s.damping,
                         solver=s.ppr_solver, epsilon=s.ppr_epsilon, exact_max_edges=s.ppr_exact_max_edges)


def _way_back(view: GraphView, start: int, seeds: set[int], ids: list[str]) -> list[int]:
    """The shortest way from a seed to ``start`` (seed first, ``start`` left out); among
    equally short ways the smallest by record ids, never by vertex numbers. Breadth-first
    over the reader's edges; empty when no seed is within ``PATH_BUDGET`` vertices."""
    parents: dict[int, set[int]] = {start: set()}
    frontier = np.array([start], dtype=np.int64)
    reached: list[int] = []
    while len(frontier) and not reached and len(parents) < PATH_BUDGET:
        owners, columns = view.entries(frontier)
        layer: dict[int, set[int]] = {}
        for owner, target in zip(owners.tolist(), columns["targets"].tolist(), strict=True):
            if target not in parents:
                layer.setdefault(target, set()).add(int(frontier[owner]))
        parents.update(layer)
        reached = [v for v in layer if v in seeds]
        frontier = np.fromiter(layer, dtype=np.int64, count=len(layer))
    if not reached:
        return []
    way = [min(reached, key=lambda v: ids[v])]
    while True:
        before = parents[way[-1]]
        if not before or start in before:
            return way
        way.append(min(before, key=lambda v: ids[v]))


@_reads
def resolve_seeds(engine: Engine, seed_ids: Iterable[str], spaces: Spaces) -> dict[str, int]:
    """Seed id -> graph vertex, for the ids the reader can see (entities or passages)."""
    state = engine.state
    projection = state.projection
    view = projection.view(spaces)
    found: dict[str, int] = {}
    for sid in seed_ids:
        v = projection.vertex.get(sid)
        if v is not None and _visible(view, v):
            found[sid] = v
    return found


@_reads
def seed_walk(engine: Engine, seed_weights: Mapping[str, float], *, spaces: Spaces, k: int,
              token_budget: int | None = None) -> list[Hit]:
    """Passages ranked by the PPR mass flowing from the given seeds.

    Weights are relative (the reset vector is normalized); unknown or hidden
    seed ids are left out, and with none left the result is empty. Each hit's
    provenance names the seeds it mentions (or, when the walk took more hops,
    the shortest way there: a seed, then the nodes between) and its facts that
    touch a seed.
    """
    state = engine.state
    projection = state.projection
    view = projection.view(spaces)
    vertices = resolve_seeds(engine, seed_weights, spaces)
    weights = [max(float(seed_weights[sid]), 0.0) for sid in vertices]
    if not vertices or sum(weights) <= 0 or not view.passage_total:
        return []
    settings = engine.settings
    ppr = _pagerank(engine, view, list(vertices.values()), weights)
    passage_vertices, mass = view.passage_scores(ppr, settings.passage_readout, settings.readout_blend)
    order = [i for i in top_indices(mass, max(k * 4, 50)) if mass[i] > 0]
    ranking = [(projection.record_ids[int(passage_vertices[i])], float(mass[i])) for i in order]
    passages = {p.id: p for p in engine.store.passages(pid for pid, _ in ranking)}

    seed_of_vertex = {v: sid for sid, v in vertices.items()}
    fact_ids = [fid for pid, _ in ranking for fid in projection.fact_ids.take(projection.facts_of(projection.vertex[pid]))]
    facts_by_passage: dict[str, list[str]] = {}
    for fact in engine.store.facts(fact_ids):
        if fact.subject_id in vertices or fact.object_id in vertices:
            facts_by_passage.setdefault(fact.passage_id, []).append(fact.id)

    def provenance(pid: str) -> Provenance:
        v = projection.vertex[pid]
        mentioned = view.mentions(v).tolist()
        # Seeds by weight, then id; ties never by vertex number (hidden records shift those).
        nodes = sorted((seed_of_vertex[u] for u in mentioned if u in seed_of_vertex),
                       key=lambda sid: (-float(seed_weights[sid]), sid))
        if v in seed_of_vertex:
            nodes.insert(0, seed_of_vertex[v])
        if not nodes:  # reached in more hops: the shortest way from a seed, seed first
            ids = projection.record_ids
            nodes = [ids[u] for u in _way_back(view, v, set(seed_of_vertex), ids)]
        return Provenance(nodes=nodes, facts=facts_by_passage.get(pid, []))

    return assemble_hits(ranking, passages, k=k, token_budget=token_budget,
                         stage_scores=lambda pid: {"ppr": round(dict(ranking)[pid], 8)}, provenance=provenance)


@_reads
def neighbors(engine: Engine, seed_ids: Iterable[str], *, spaces: Spaces, hops: int = 1,
              limit: int = 50) -> Neighborhood:
    """The nodes within ``hops`` edges of the seeds and the weighted edges between them.

    Hubs make a neighbourhood explode (an entity in a thousand passages), so
    nodes are ranked by the PPR mass flowing from the seeds and the ``limit``
    best are kept, seeds always among them. Parallel edges of one kind (the
    same relation read from several passages) are summed into one.
    """
    if not 1 <= hops <= MAX_HOPS:
        raise ValueError(f"hops must be from 1 to {MAX_HOPS}")
    state = engine.state
    projection = state.projection
    view = projection.view(spaces)
    seeds = resolve_seeds(engine, seed_ids, spaces)
    if not seeds:
        return Neighborhood(seeds=[], nodes=[], edges=[])
    reached = set(seeds.values())
    frontier = np.array(sorted(reached), dtype=np.int64)
    for _ in range(hops):
        _, columns = view.entries(frontier)
        fresh = set(columns["targets"].tolist()) - reached
        reached |= fresh
        frontier = np.fromiter(fresh, dtype=np.int64, count=len(fresh))

    ppr = _pagerank(engine, view, list(seeds.values()), [1.0] * len(seeds))
    mass = dict(zip(ppr.vertices.tolist(), ppr.scores.tolist(), strict=True))
    seed_vertices = set(seeds.values())
    # Ties go by record id, never by vertex number: hidden records shift vertex numbers.
    ids = projection.record_ids
    others = sorted(reached - seed_vertices, key=lambda v: (-mass.get(v, 0.0), ids[v]))
    kept = sorted(seed_vertices, key=lambda v: (-mass.get(v, 0.0), ids[v])) + \
        others[: max(0, limit - len(seed_vertices))]

    kept_set = set(kept)
    entity_ids = [projection.record_ids[v] for v in kept if not projection.is_passage[v]]
    passage_ids = [projection.record_ids[v] for v in kept if projection.is_passage[v]]
    names = visible_names(engine.store, projection, view, entity_ids)
    names.update({p.id: p.title for p in engine.store.passages(passage_ids)})
    nodes = [GraphNode(id=projection.record_ids[v], kind="passage" if projection.is_passage[v] else "entity",
                       name=names.get(projection.record_ids[v], ""), score=round(mass.get(v, 0.0), 8),
                       seed=v in seed_vertices) for v in kept]

    weights: dict[tuple[int, int, str], float] = {}
    inside = np.array(kept, dtype=np.int64)
    owners, columns = view.entries(inside)
    for owner, target, kind, weight in zip(owners.tolist(), columns["targets"].tolist(), columns["kinds"].tolist(),
                                           columns["weights"].tolist(), strict=True):
        source = kept[owner]
        if target in kept_set and source < target:  # each edge is an entry at both of its ends
            a, b = sorted((ids[source], ids[target]))
            key = (a, b, KIND_NAMES[kind])
            weights[key] = weights.get(key, 0.0) + float(weight)
    edges = [GraphEdge(src=a, dst=b, kind=kind, weight=round(w, 6)) for (a, b, kind), w in sorted(weights.items())]
    return Neighborhood(seeds=list(seeds), nodes=nodes, edges=edges)


@_reads
def view_records(engine: Engine, spaces: Spaces) -> ViewRecords:
    """Ids of the entities and facts a reader of ``spaces`` can reach."""
    state = engine.state
    p = state.projection
    view = p.view(spaces)
    entities = np.flatnonzero(~p.is_passage.values)
    entities = entities[view.passage_count[entities] > 0]
    rows = np.flatnonzero(view.visible_passage[p.fact_passage.values]) if len(p.fact_ids) else np.zeros(0, int)
    return ViewRecords(entity_ids=[p.record_ids[v] for v in entities.tolist()],
                       fact_ids=p.fact_ids.take(rows))
