// The embedding cache by text hash. $hashes: [string]
UNWIND $hashes AS h
MATCH (v:Vector {hash: h})
RETURN v.hash AS hash, v.vector AS vector
