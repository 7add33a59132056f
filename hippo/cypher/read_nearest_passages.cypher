// Store-side recall: the visible passages nearest to each query vector (hippo.store.neo4j.reader).
// The vector index answers a global top $fetch; the reader keeps live passages of its spaces and
// widens $fetch while it finds fewer than it wants and the index had more (fetched = $fetch).
// Only the first $keep visible hits in the index's order are scored and read: a search for the one
// farthest record asks the index wide (its beam) but needs few of the hits, and visibility and
// vectors are most of a search's cost.
// Scores are (1 + cosine) / 2: the index's own where it holds float vectors (hippo's, the same floats
// as a score computed again: 16,000 hits of the 10k store, none differed), computed again from each
// hit's vector where it holds int8 codes ($rescore: Neo4j's default, kept by older databases; its
// scores were off by up to 0.17). Reading the 400 vectors of a search for 200 cost ~4 of its 13 ms.
// $queries: [[float]], $fetch: [int] (per query), $keep: int, $rescore: bool, $spaces: [string] or null
UNWIND range(0, size($queries) - 1) AS i
CALL (i) {
  CALL db.index.vector.queryNodes('passage_embedding', $fetch[i], $queries[i]) YIELD node, score
  WITH collect([node, score]) AS hits
  CALL (hits, i) {
    UNWIND hits AS hit
    WITH hit[0] AS v, hit[1] AS indexed
    MATCH (p:Passage {embed_hash: v.hash})
    WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
    WITH p, v, indexed
    LIMIT $keep
    WITH p,
         CASE WHEN $rescore THEN vector.similarity.cosine(v.embedding, $queries[i]) ELSE indexed END AS score
    ORDER BY score DESC, p.seq
    RETURN collect([p.id, score]) AS found
  }
  RETURN size(hits) AS fetched, found
}
RETURN i, fetched, found
