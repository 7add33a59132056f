// Store-side recall: the visible entities nearest to each query vector. An entity is visible when
// a live passage of the reader's spaces mentions it. See read_nearest_passages.cypher.
// $queries: [[float]], $fetch: [int] (per query), $keep: int, $spaces: [string] or null
UNWIND range(0, size($queries) - 1) AS i
CALL (i) {
  CALL db.index.vector.queryNodes('entity_embedding', $fetch[i], $queries[i]) YIELD node
  WITH collect(node) AS hits
  CALL (hits, i) {
    UNWIND hits AS v
    MATCH (e:Entity {embed_hash: v.hash})
    WHERE EXISTS {
      MATCH (p:Passage)-[:MENTIONS]->(e)
      WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
    }
    WITH e, v
    LIMIT $keep
    WITH e, vector.similarity.cosine(v.embedding, $queries[i]) AS score
    ORDER BY score DESC, e.seq
    RETURN collect([e.id, score]) AS found
  }
  RETURN size(hits) AS fetched, found
}
RETURN i, fetched, found
