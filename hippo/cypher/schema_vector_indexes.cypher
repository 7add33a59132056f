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
// Float vectors, 32 links a node, a build beam of 50. Neo4j 5.26's default (int8 codes, 16 links,
// beam 100) found 0.93 / 0.74 / 0.79 of the exact top 10 of passages / entities / facts in a search
// for 10 (a 10k-passage synthetic store, Java 17) and built the three in 108 s; this finds 1.00 /
// 0.91 / 0.90 and builds them in 46 s (scripts/README-neo4j.md, "Vector index configuration").
CREATE VECTOR INDEX passage_embedding IF NOT EXISTS FOR (v:PassageVector) ON v.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine',
                         `vector.quantization.enabled`: false, `vector.hnsw.m`: 32,
                         `vector.hnsw.ef_construction`: 50}};
CREATE VECTOR INDEX entity_embedding IF NOT EXISTS FOR (v:EntityVector) ON v.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine',
                         `vector.quantization.enabled`: false, `vector.hnsw.m`: 32,
                         `vector.hnsw.ef_construction`: 50}};
CREATE VECTOR INDEX fact_embedding IF NOT EXISTS FOR (v:FactVector) ON v.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine',
                         `vector.quantization.enabled`: false, `vector.hnsw.m`: 32,
                         `vector.hnsw.ef_construction`: 50}};
