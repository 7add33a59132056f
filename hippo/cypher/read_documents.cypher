UNWIND $ids AS id
MATCH (d:Document {id: id})
RETURN d.id AS id, d.title AS title, d.source AS source, d.space AS space, d.version AS version,
       d.meta AS meta, d.kind AS kind, d.forgotten_at AS forgotten_at, d.forgotten_reason AS forgotten_reason
