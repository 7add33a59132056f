MATCH (m:Meta {id: $meta})
SET m.schema_version = $schema_version
