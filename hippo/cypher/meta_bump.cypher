// Last statement of a write that changed something; $write_id: the batch's (null: none).
MATCH (m:Meta {id: $meta})
SET m.revision = m.revision + 1, m.seq = $seq, m.write_id = $write_id
RETURN m.revision AS revision
