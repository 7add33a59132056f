// Store-side recall: the visible entities nearest to each query vector. An entity is visible when
// a live passage of the reader's spaces mentions it. See read_nearest_passages.cypher.
// $queries: [[float]], $fetch: [int] (per query), $spaces: [string] or null
UNWIND range(0, size($queries) - 1) AS i
CALL (i) {
  CALL db.index.vector.queryNodes('entity_embedding', $fetch[i], $queries[i]) YIELD node
  WITH collect([node.hash, vector.similarity.cosine(node.embedding, $queries[i])]) AS hits
  CALL (hits) {
    UNWIND hits AS hit
    MATCH (e:Entity {embed_hash: hit[0]})
    WHERE EXISTS {
      MATCH (p:Passage)-[:MENTIONS]->(e)
      WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
    }
    WITH e, hit[1] AS score
    ORDER BY score DESC, e.seq
    RETURN collect([e.id, score]) AS found
  }
  RETURN size(hits) AS fetched, found
}
RETURN i, fetched, found
