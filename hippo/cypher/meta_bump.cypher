// Last statement of a write that changed something.
MATCH (m:Meta {id: $meta})
SET m.revision = m.revision + 1, m.seq = $seq
RETURN m.revision AS revision
