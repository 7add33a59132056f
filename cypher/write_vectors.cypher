// The vectors: one (:Vector) node per distinct embedded text, found by its text hash
// (`embed_hash` on Passage, Entity and RELATES). Nothing a person browses carries a vector:
// `vector` is float32 little-endian bytes (what hippo loads back, compact and fast in bulk) and
// `embedding` the same numbers as a float32 list, which a vector index reads once a record of
// its kind labels the node (write_vector_kinds_*). `dim` is the length.
// The caller sends only hashes not stored yet (it checked under the meta lock).
// $rows: [{hash, vector, dim, embedding: [float]}]
UNWIND $rows AS row
MERGE (v:Vector {hash: row.hash})
  ON CREATE SET v.vector = row.vector, v.dim = row.dim
WITH v, row
CALL db.create.setNodeVectorProperty(v, 'embedding', row.embedding)
RETURN count(*) AS written
