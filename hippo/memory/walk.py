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
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from hippo.graph.ppr import power_pagerank
from hippo.graph.projection import GraphView
from hippo.graph.scoring import passage_mass, top_indices
from hippo.memory.hits import assemble_hits
from hippo.memory.names import visible_names
from hippo.models import GraphEdge, GraphNode, Hit, Neighborhood, Provenance
from hippo.store.base import Spaces

if TYPE_CHECKING:
    from hippo.memory.engine import Memory
    from hippo.memory.state import DerivedState

MAX_HOPS = 3
T = TypeVar("T")


@dataclass(frozen=True)
class ViewRecords:
    """What one reader's view holds: entities with a visible passage, facts read from one."""

    entity_ids: list[str]
    fact_ids: list[str]


def _reads(walk: Callable[..., T]) -> Callable[..., T]:
    """Run a walk inside the engine's read section: a write's in-place update waits for it."""
    @functools.wraps(walk)
    def guarded(memory: Memory, *args: Any, **kwargs: Any) -> T:
        with memory.reading():
            return walk(memory, *args, **kwargs)
    return guarded


def _state(memory: Memory) -> DerivedState:
    # Inside a read section: the section's consistent state, the one recall reads.
    return memory._current()  # noqa: SLF001


@_reads
def graph_spaces(memory: Memory) -> frozenset[str]:
    """Every space that holds a live passage of the graph."""
    projection = _state(memory).projection
    return frozenset(s for s, is_passage, live in zip(projection.space, projection.is_passage, projection.live,
                                                      strict=True) if is_passage and live and s is not None)


def _visible(view: GraphView, is_passage: list[bool], v: int) -> bool:
    return bool(view.visible_passage[v]) if is_passage[v] else bool(view.passage_count[v] > 0)


@_reads
def resolve_seeds(memory: Memory, seed_ids: Iterable[str], spaces: Spaces) -> dict[str, int]:
    """Seed id -> graph vertex, for the ids the reader can see (entities or passages)."""
    state = _state(memory)
    projection = state.projection
    view = projection.view(spaces)
    found: dict[str, int] = {}
    for sid in seed_ids:
        v = projection.vertex.get(sid)
        if v is not None and _visible(view, projection.is_passage, v):
            found[sid] = v
    return found


@_reads
def seed_walk(memory: Memory, seed_weights: Mapping[str, float], *, spaces: Spaces, k: int,
              token_budget: int | None = None) -> list[Hit]:
    """Passages ranked by the PPR mass flowing from the given seeds.

    Weights are relative (the reset vector is normalized); unknown or hidden
    seed ids are left out, and with none left the result is empty. Each hit's
    provenance names the seeds it mentions (or, when the walk took more hops,
    the shortest way there: a seed, then the nodes between) and its facts that
    touch a seed.
    """
    state = _state(memory)
    projection = state.projection
    view = projection.view(spaces)
    vertices = resolve_seeds(memory, seed_weights, spaces)
    reset = np.zeros(view.graph.vcount())
    for sid, v in vertices.items():
        reset[v] += max(float(seed_weights[sid]), 0.0)
    if not vertices or reset.sum() <= 0 or not len(view.passage_vertices):
        return []
    settings = memory.settings
    ppr = power_pagerank(view.transition, reset, settings.damping)
    mass = passage_mass(ppr, view.passage_vertices, view.incidence, settings.passage_readout,
                        settings.readout_blend, strength=view.strength)
    order = [i for i in top_indices(mass, max(k * 4, 50)) if mass[i] > 0]
    ranking = [(projection.record_ids[view.passage_vertices[i]], float(mass[i])) for i in order]
    passages = {p.id: p for p in memory.store.passages(pid for pid, _ in ranking)}

    seed_of_vertex = {v: sid for sid, v in vertices.items()}
    fact_ids = [fid for pid, _ in ranking for fid in projection.facts_of.get(projection.vertex[pid], [])]
    facts_by_passage: dict[str, list[str]] = {}
    for fact in memory.store.facts(fact_ids):
        if fact.subject_id in vertices or fact.object_id in vertices:
            facts_by_passage.setdefault(fact.passage_id, []).append(fact.id)

    def provenance(pid: str) -> Provenance:
        v = projection.vertex[pid]
        mentioned = view.incidence[v].indices.tolist()
        # Seeds by weight, then id; ties never by vertex number (hidden records shift those).
        nodes = sorted((seed_of_vertex[u] for u in mentioned if u in seed_of_vertex),
                       key=lambda sid: (-float(seed_weights[sid]), sid))
        if v in seed_of_vertex:
            nodes.insert(0, seed_of_vertex[v])
        if not nodes:  # reached in more hops: the shortest way from a seed, seed first
            # Every shortest path, not igraph's pick among equals (that follows vertex numbers).
            paths = [p for p in view.graph.get_all_shortest_paths(v, to=list(seed_of_vertex)) if p]
            if paths:
                ids = projection.record_ids
                best = min(paths, key=lambda path: (len(path), [ids[u] for u in reversed(path)]))
                nodes = [ids[u] for u in reversed(best[1:])]
        return Provenance(nodes=nodes, facts=facts_by_passage.get(pid, []))

    return assemble_hits(ranking, passages, k=k, token_budget=token_budget,
                         stage_scores=lambda pid: {"ppr": round(dict(ranking)[pid], 8)}, provenance=provenance)


@_reads
def neighbors(memory: Memory, seed_ids: Iterable[str], *, spaces: Spaces, hops: int = 1,
              limit: int = 50) -> Neighborhood:
    """The nodes within ``hops`` edges of the seeds and the weighted edges between them.

    Hubs make a neighbourhood explode (an entity in a thousand passages), so
    nodes are ranked by the PPR mass flowing from the seeds and the ``limit``
    best are kept, seeds always among them. Parallel edges of one kind (the
    same relation read from several passages) are summed into one.
    """
    if not 1 <= hops <= MAX_HOPS:
        raise ValueError(f"hops must be from 1 to {MAX_HOPS}")
    state = _state(memory)
    projection = state.projection
    view = projection.view(spaces)
    seeds = resolve_seeds(memory, seed_ids, spaces)
    if not seeds:
        return Neighborhood(seeds=[], nodes=[], edges=[])
    reached: set[int] = set()
    for ball in view.graph.neighborhood(vertices=list(seeds.values()), order=hops):
        reached.update(ball)
    reached = {v for v in reached if _visible(view, projection.is_passage, v)}

    reset = np.zeros(view.graph.vcount())
    reset[list(seeds.values())] = 1.0
    ppr = power_pagerank(view.transition, reset, memory.settings.damping)
    seed_vertices = set(seeds.values())
    # Ties go by record id, never by vertex number: hidden records shift vertex numbers.
    ids = projection.record_ids
    others = sorted(reached - seed_vertices, key=lambda v: (-ppr[v], ids[v]))
    kept = sorted(seed_vertices, key=lambda v: (-ppr[v], ids[v])) + others[: max(0, limit - len(seed_vertices))]

    entity_ids = [projection.record_ids[v] for v in kept if not projection.is_passage[v]]
    passage_ids = [projection.record_ids[v] for v in kept if projection.is_passage[v]]
    names = visible_names(memory.store, projection, view, entity_ids)
    names.update({p.id: p.title for p in memory.store.passages(passage_ids)})
    nodes = [GraphNode(id=projection.record_ids[v], kind="passage" if projection.is_passage[v] else "entity",
                       name=names.get(projection.record_ids[v], ""), score=round(float(ppr[v]), 8),
                       seed=v in seed_vertices) for v in kept]

    weights: dict[tuple[int, int, str], float] = {}
    for edge in view.graph.es.select(_within=kept):
        a, b = sorted((ids[edge.tuple[0]], ids[edge.tuple[1]]))
        key = (a, b, edge["kind"])
        weights[key] = weights.get(key, 0.0) + float(edge["weight"])
    edges = [GraphEdge(src=a, dst=b, kind=kind, weight=round(w, 6)) for (a, b, kind), w in sorted(weights.items())]
    return Neighborhood(seeds=list(seeds), nodes=nodes, edges=edges)


@_reads
def view_records(memory: Memory, spaces: Spaces) -> ViewRecords:
    """Ids of the entities and facts a reader of ``spaces`` can reach."""
    state = _state(memory)
    view = state.projection.view(spaces)
    entity_vertex = state.entity_vertex_of_row
    entity_rows = np.flatnonzero((entity_vertex >= 0) & (view.passage_count[np.maximum(entity_vertex, 0)] > 0))
    fact_vertex = state.fact_passage_vertex
    fact_rows = np.flatnonzero((fact_vertex >= 0) & view.visible_passage[np.maximum(fact_vertex, 0)])
    return ViewRecords(entity_ids=[state.entities.ids[i] for i in entity_rows],
                       fact_ids=[state.facts.ids[i] for i in fact_rows])
