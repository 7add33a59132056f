// Vectors of a re-embedding, beside the live ones until the swap: `vector` and `embedding`
// as in write_vectors (bytes for hippo, a float32 list for the vector indexes).
// $rows: [{hash, vector, dim, embedding}]
UNWIND $rows AS row
MERGE (v:StagedVector {hash: row.hash})
SET v.vector = row.vector, v.dim = row.dim
WITH v, row
CALL db.create.setNodeVectorProperty(v, 'embedding', row.embedding)
