// Stored versions of documents, for a write's optimistic-concurrency check.
UNWIND $ids AS id
MATCH (d:Document {id: id})
RETURN d.id AS id, d.version AS version
