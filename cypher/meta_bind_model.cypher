MATCH (m:Meta {id: $meta})
SET m.embedding_model = $name, m.embedding_dim = $dim
