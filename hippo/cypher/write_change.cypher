// What one write changed, for readers that keep fetched edges across revisions
// (hippo.memory.store_cache.ReaderCache): the nodes whose visible edges, strength or passage count
// moved at $revision (null: too many to list, drop everything). The last $keep are kept; a reader
// further behind starts over.
CREATE (:Change {revision: $revision, nodes: $nodes})
WITH 1 AS done
MATCH (c:Change) WHERE c.revision <= $revision - $keep
DELETE c
