// The float32 embedding of new entities, for the entity_embedding vector index.
// $rows: [{id, embedding: [float]}]
UNWIND $rows AS row
MATCH (n:Entity {id: row.id})
CALL db.create.setNodeVectorProperty(n, 'embedding', row.embedding)
