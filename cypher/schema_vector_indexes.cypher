// Vector indexes over the embeddings of passages, entities and facts, created
// once the embedding model (and so the dimension) is bound. $dim: int.
CREATE VECTOR INDEX passage_embedding IF NOT EXISTS FOR (n:Passage) ON n.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX entity_embedding IF NOT EXISTS FOR (n:Entity) ON n.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX fact_embedding IF NOT EXISTS FOR ()-[r:RELATES]-() ON r.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}};
