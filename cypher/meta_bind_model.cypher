// The model and backend that made the stored vectors (a store bound before backends
// were recorded has no embedding_backend: it was torch).
MATCH (m:Meta {id: $meta})
SET m.embedding_model = $name, m.embedding_dim = $dim, m.embedding_backend = $backend
