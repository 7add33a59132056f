// New entities only, their degree counters at zero (schema.cypher says what they count).
// $rows: [{seq, props: {id, name, key, type, embed_hash}}]
UNWIND $rows AS row
CREATE (e:Entity)
SET e = row.props, e.seq = row.seq, e.mention_count = 0, e.fact_count = 0, e.synonym_weight = 0.0
RETURN collect(e.id) AS created
