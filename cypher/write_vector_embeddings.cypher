// The float32 list of stored vectors (a migration from schema version 1). $rows: [{hash, embedding: [float]}]
UNWIND $rows AS row
MATCH (v:Vector {hash: row.hash})
CALL db.create.setNodeVectorProperty(v, 'embedding', row.embedding)
