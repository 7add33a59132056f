// One namespace of the key-value area, in key order: a prefix seek on the unique id (namespace + NUL + key).
MATCH (v:Value)
WHERE v.id STARTS WITH $prefix
RETURN v.key AS key, v.value AS value
ORDER BY v.id
LIMIT $limit
