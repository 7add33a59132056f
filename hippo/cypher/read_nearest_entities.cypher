// Store-side recall: the visible entities nearest to each query vector. An entity is visible when
// a live passage of the reader's spaces mentions it. See read_nearest_passages.cypher.
// $queries: [[float]], $fetch: [int] (per query), $keep: int, $rescore: bool, $spaces: [string] or null
UNWIND range(0, size($queries) - 1) AS i
CALL (i) {
  CALL db.index.vector.queryNodes('entity_embedding', $fetch[i], $queries[i]) YIELD node, score
  WITH collect([node, score]) AS hits
  CALL (hits, i) {
    UNWIND hits AS hit
    WITH hit[0] AS v, hit[1] AS indexed
    MATCH (e:Entity {embed_hash: v.hash})
    WHERE EXISTS {
      MATCH (p:Passage)-[:MENTIONS]->(e)
      WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
    }
    WITH e, v, indexed
    LIMIT $keep
    WITH e,
         CASE WHEN $rescore THEN vector.similarity.cosine(v.embedding, $queries[i]) ELSE indexed END AS score
    ORDER BY score DESC, e.seq
    RETURN collect([e.id, score]) AS found
  }
  RETURN size(hits) AS fetched, found
}
RETURN i, fetched, found
