// The meta node of a bulk-loaded store: the source store's revision, model binding and schema
// version, and the next record sequence number (the import numbered records 0 .. $seq - 1).
MERGE (m:Meta {id: $meta})
SET m.revision = $revision, m.seq = $seq, m.schema_version = $schema_version,
    m.embedding_model = $model, m.embedding_dim = $dim, m.embedding_backend = $backend
RETURN m.revision AS revision
