// Upsert documents; a property is only written when it differs, so re-writing the
// same document changes nothing (and does not bump the revision).
// $rows: [{id, props: {id, title, name, source?, space, version, meta}}]
UNWIND $rows AS row
MERGE (d:Document {id: row.id})
  ON CREATE SET d = row.props
FOREACH (_ IN CASE WHEN properties(d) <> row.props THEN [1] ELSE [] END | SET d = row.props)
RETURN count(*) AS written
