// The one meta node: revision counter, record sequence, bound embedding model.
MERGE (m:Meta {id: $meta})
  ON CREATE SET m.revision = 0, m.seq = 0, m.schema_version = $schema_version
RETURN m.revision AS revision, m.schema_version AS schema_version
