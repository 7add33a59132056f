"""The igraph projection, synonym linking and PPR."""

from hippo.graph.ppr import Transition, personalized_pagerank, power_pagerank
from hippo.graph.projection import GraphProjection, GraphView
from hippo.graph.synonyms import synonym_edges

__all__ = ["GraphProjection", "GraphView", "Transition", "personalized_pagerank", "power_pagerank",
           "synonym_edges"]
