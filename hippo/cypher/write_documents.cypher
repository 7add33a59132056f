// Upsert documents; a property is only written when it differs, so re-writing the
// same document changes nothing (and does not bump the revision). A null in props
// removes the property (a restored document loses its tombstone).
// $rows: [{id, seq, props: {id, title, name, source, space, version, meta, kind, forgotten_at, forgotten_reason}}]
UNWIND $rows AS row
MERGE (d:Document {id: row.id})
  ON CREATE SET d.seq = row.seq
WITH d, row
WHERE any(k IN keys(row.props) WHERE NOT (d[k] = row.props[k]) OR (d[k] IS NULL) <> (row.props[k] IS NULL))
SET d += row.props
RETURN count(*) AS written
