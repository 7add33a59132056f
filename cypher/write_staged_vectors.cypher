// Vectors of a re-embedding, beside the live ones until the swap: `vector` as in
// write_vectors, `embedding` the float list the vector indexes read.
// $rows: [{hash, vector, dim, embedding}]
UNWIND $rows AS row
MERGE (v:StagedVector {hash: row.hash})
SET v.vector = row.vector, v.dim = row.dim, v.embedding = row.embedding
