"""``hippo relink``: the vector graphs of a saved derived state linked again whole, as hippo links a
graph of their size today.

A graph of ``vector_wide_from`` rows or more (500k) gets ``vector_wide_links`` links a node (32; 16
below): at the 100k store's 1M synthetic facts its questions' re-ranked top 10 held 0.985 of the exact
one at ef 432 with 16 links and 0.988 with 32 (``results/ann_codes-links-stop60.md``). A graph an older
hippo saved past that size keeps its 16 links as writes grow it (``AnnSettings.rebuilds``): linking 10M
facts again takes about an hour on 2 cores (1M took 342 s), more than any write should wait. This does
it when asked, with writes and reads of this process waiting, then saves the state for every later open.
Likewise one graph past ``vector_graph_rows`` (2M; an older hippo's) is split into graphs of at most that
many (``hippo.memory.segments``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    from hippo.memory.core import Engine


class RelinkedGraph(BaseModel):
    kind: str  # passage, entity or fact
    shard: int  # the space's shard code
    rows: int
    links_before: int
    links: int  # the fewest of its graphs'
    graphs: int = 1  # graphs the shard is held in now


class RelinkResult(BaseModel):
    store: str
    graphs: list[RelinkedGraph]
    saved: bool  # the state saved beside the store (not for ``:memory:`` or ``derived_cache=False``)
    seconds: float

    def summary(self) -> str:
        if not self.graphs:
            return f"{self.store}: every vector graph is linked as hippo links one of its size: nothing to relink"
        built = "; ".join(f"{g.kind}/{g.shard}: {g.rows:,} rows, {g.links_before} -> {g.links} links"
                          + (f" in {g.graphs} graphs" if g.graphs > 1 else "")
                          for g in self.graphs)
        kept = "the derived state is saved" if self.saved else "nothing saved: this store keeps no derived state"
        return f"relinked {self.store} in {self.seconds:.1f}s: {built}; {kept}"


def relink(engine: Engine) -> RelinkResult:
    clock = time.perf_counter()
    before = {(kind, code): index.shards[code].links for kind, index in engine.state.vector_indexes()
              for code in index.relinkable()}
    built = engine.relink()
    indexes = dict(engine.state.vector_indexes())
    graphs = []
    for kind, code in built:
        graph = indexes[kind].shards[code]
        graphs.append(RelinkedGraph(kind=kind, shard=code, rows=len(graph), links_before=before[kind, code],
                                    links=graph.links, graphs=len(getattr(graph, "graphs", [graph]))))
    return RelinkResult(store=engine.store.url, graphs=graphs, saved=bool(built) and engine.cache is not None,
                        seconds=round(time.perf_counter() - clock, 3))


def relink_url(url: str | None) -> RelinkResult:
    """Open the store at ``url`` (default ``HIPPO_STORE``) as ``hippo`` does and relink its graphs."""
    from hippo.memory import Memory

    with Memory.open(url) as memory:
        return relink(memory.engine)
