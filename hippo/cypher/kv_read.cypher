// The small key-value area: one (:Value {id: namespace + NUL + key}) node per entry.
UNWIND $ids AS id
MATCH (v:Value {id: id})
RETURN v.key AS key, v.value AS value
