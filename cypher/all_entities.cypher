// Every entity (what a re-embedding encodes).
MATCH (e:Entity)
RETURN e.id AS id, e.name AS name, e.key AS key, e.type AS type
