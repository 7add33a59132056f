// Store-side recall: the visible facts nearest to each query vector, with their ends, passage and
// text hash. A fact is visible when the live passage it was read from is in the reader's spaces
// (the fact keeps that passage's space and forgotten_at).
// See read_nearest_passages.cypher. $queries: [[float]], $fetch: [int] (per query), $keep: int, $rescore: bool,
// $spaces: [string] or null
UNWIND range(0, size($queries) - 1) AS i
CALL (i) {
  CALL db.index.vector.queryNodes('fact_embedding', $fetch[i], $queries[i]) YIELD node, score
  WITH collect([node, score]) AS hits
  CALL (hits, i) {
    UNWIND hits AS hit
    WITH hit[0] AS v, hit[1] AS indexed
    MATCH (s:Entity)-[r:RELATES {embed_hash: v.hash}]->(o:Entity)
    WHERE r.forgotten_at IS NULL AND r.space IS NOT NULL AND ($spaces IS NULL OR r.space IN $spaces)
    WITH r, s, o, v, indexed
    LIMIT $keep
    WITH r, s, o,
         CASE WHEN $rescore THEN vector.similarity.cosine(v.embedding, $queries[i]) ELSE indexed END AS score
    ORDER BY score DESC, r.seq
    RETURN collect([r.id, score, s.id, o.id, r.passage_id, r.embed_hash]) AS found
  }
  RETURN size(hits) AS fetched, found
}
RETURN i, fetched, found
