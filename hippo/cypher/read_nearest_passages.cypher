// Store-side recall: the visible passages nearest to each query vector (hippo.store.neo4j.reader).
// The vector index answers a global top $fetch; the reader keeps live passages of its spaces and
// widens $fetch while it finds fewer than it wants and the index had more (fetched = $fetch).
// Only the first $keep visible hits in the index's order are scored and read: a search for the one
// farthest record asks the index wide (its beam) but needs few of the hits, and visibility and
// vectors are most of a search's cost.
// Scores are (1 + cosine) / 2, recomputed from each hit's vector: the index's own are quantized.
// $queries: [[float]], $fetch: [int] (per query), $keep: int, $spaces: [string] or null (every space)
UNWIND range(0, size($queries) - 1) AS i
CALL (i) {
  CALL db.index.vector.queryNodes('passage_embedding', $fetch[i], $queries[i]) YIELD node
  WITH collect(node) AS hits
  CALL (hits, i) {
    UNWIND hits AS v
    MATCH (p:Passage {embed_hash: v.hash})
    WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
    WITH p, v
    LIMIT $keep
    WITH p, vector.similarity.cosine(v.embedding, $queries[i]) AS score
    ORDER BY score DESC, p.seq
    RETURN collect([p.id, score]) AS found
  }
  RETURN size(hits) AS fetched, found
}
RETURN i, fetched, found
