// First statement of every write transaction: takes the meta node's write lock, so
// concurrent writers run one after the other (like SQLite's BEGIN IMMEDIATE) and
// sequence numbers never collide. The SET is what takes the lock.
MERGE (m:Meta {id: $meta})
  ON CREATE SET m.revision = 0, m.seq = 0, m.schema_version = $schema_version
SET m.seq = coalesce(m.seq, 0)
RETURN m.revision AS revision, m.seq AS seq, m.embedding_model AS model, m.embedding_dim AS dim,
       m.embedding_backend AS backend, m.staged_embedding AS staged
