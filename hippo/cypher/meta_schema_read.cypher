// The schema version of the graph, read without writing (an opener that may not change the schema).
OPTIONAL MATCH (m:Meta {id: $meta})
RETURN m.schema_version AS schema_version
