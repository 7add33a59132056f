// Vector indexes over the embeddings of passages, entities and facts, created once the
// embedding model (and so the dimension) is bound. $dim: int.
//
// Where vectors live: on (:Vector {hash, vector, dim, embedding}) nodes, one per distinct
// embedded text, never on the Passage, Entity and RELATES records people browse. A record's
// vector is the Vector whose `hash` is the record's `embed_hash`; a Vector used by a record of
// a kind carries that kind's label (:PassageVector, :EntityVector, :FactVector), and each
// index covers one label. To search passages by vector:
//   CALL db.index.vector.queryNodes('passage_embedding', $k, $query) YIELD node, score
//   MATCH (p:Passage {embed_hash: node.hash}) WHERE p.forgotten_at IS NULL
//   RETURN p.id, score
// (several records may share one text, and a retired passage keeps its vector: filter).
// Replacing the vectors (re-embedding) rewrites `vector`, `dim` and `embedding` on the Vector
// nodes only; with a new dimension the indexes are dropped and created again.
CREATE VECTOR INDEX passage_embedding IF NOT EXISTS FOR (v:PassageVector) ON v.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX entity_embedding IF NOT EXISTS FOR (v:EntityVector) ON v.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX fact_embedding IF NOT EXISTS FOR (v:FactVector) ON v.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}};
