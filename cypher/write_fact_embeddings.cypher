// The float32 embedding of new facts, for the fact_embedding vector index.
// $rows: [{id, embedding: [float]}]
UNWIND $rows AS row
MATCH ()-[r:RELATES {id: row.id}]->()
CALL db.create.setRelationshipVectorProperty(r, 'embedding', row.embedding)
