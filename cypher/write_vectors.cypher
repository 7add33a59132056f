// The embedding cache: one node per distinct text hash; `vector` is float32
// little-endian bytes (compact, and fast to read back in bulk). $rows: [{hash, vector, dim}]
UNWIND $rows AS row
MERGE (v:Vector {hash: row.hash})
  ON CREATE SET v.vector = row.vector, v.dim = row.dim
RETURN count(*) AS written
