// The float32 embedding of new passages, for the passage_embedding vector index.
// $rows: [{id, embedding: [float]}]
UNWIND $rows AS row
MATCH (n:Passage {id: row.id})
CALL db.create.setNodeVectorProperty(n, 'embedding', row.embedding)
