// What store-side recall needs of the reader's whole view, read once per store revision: live
// passages in the reader's spaces and their summed length in words (the BM25 length norm), kept
// per space (schema.cypher); how many facts and entities have vectors, the graph's edges and its
// passages (visible or not: the count store).
// O(spaces).
// $spaces: [string] or null
MATCH (m:Meta {id: $meta})
CALL () {
  MATCH (s:Space)
  WHERE $spaces IS NULL OR s.name IN $spaces
  RETURN sum(s.live_passages) AS passages, sum(s.live_words) AS words
}
CALL () { MATCH (v:FactVector) RETURN count(v) AS facts }
CALL () { MATCH (v:EntityVector) RETURN count(v) AS entities }
CALL () { MATCH ()-[r:RELATES]->() RETURN count(r) AS relations }
CALL () { MATCH ()-[r:MENTIONS]->() RETURN count(r) AS mentions }
CALL () { MATCH ()-[r:SYNONYM]->() RETURN count(r) AS synonyms }
CALL () { MATCH (p:Passage) RETURN count(p) AS stored }
RETURN m.revision AS revision, passages, words, facts, entities, relations + mentions + synonyms AS edges, stored
