// New entities only. $rows: [{seq, props: {id, name, key, type, embed_hash}}]
UNWIND $rows AS row
CREATE (e:Entity)
SET e = row.props, e.seq = row.seq
RETURN collect(e.id) AS created
