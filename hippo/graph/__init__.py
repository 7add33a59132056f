"""The graph projection (columns and CSR runs), reader views, synonym linking and PPR."""

from hippo.graph.ppr import (
    Adjacency,
    CsrAdjacency,
    SparseScores,
    Transition,
    personalized_pagerank,
    power_pagerank,
    push_pagerank,
)
from hippo.graph.projection import GraphProjection
from hippo.graph.synonyms import synonym_edges
from hippo.graph.view import GraphView

__all__ = ["Adjacency", "CsrAdjacency", "GraphProjection", "GraphView", "SparseScores", "Transition",
           "personalized_pagerank", "power_pagerank", "push_pagerank", "synonym_edges"]
