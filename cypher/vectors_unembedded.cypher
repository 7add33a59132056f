// Vectors without their float list `embedding` (left by a store of schema version 1), a page at a time.
MATCH (v:Vector) WHERE v.embedding IS NULL
RETURN v.hash AS hash, v.vector AS vector
LIMIT $limit
