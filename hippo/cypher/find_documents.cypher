// Documents by space and kind, newest first. $spaces: [string] or null (all); $kind: string or null.
MATCH (d:Document)
WHERE ($spaces IS NULL OR d.space IN $spaces)
  AND ($kind IS NULL OR coalesce(d.kind, 'document') = $kind)
  AND (NOT $live OR d.forgotten_at IS NULL)
RETURN d.id AS id, d.title AS title, d.source AS source, d.space AS space, d.version AS version,
       d.meta AS meta, d.kind AS kind, d.forgotten_at AS forgotten_at, d.forgotten_reason AS forgotten_reason
ORDER BY d.seq DESC
LIMIT $limit
