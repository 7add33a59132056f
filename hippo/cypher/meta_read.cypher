OPTIONAL MATCH (m:Meta {id: $meta})
RETURN coalesce(m.revision, 0) AS revision, m.embedding_model AS model, m.embedding_dim AS dim,
       m.embedding_backend AS backend, m.staged_embedding AS staged, m.write_id AS write_id
