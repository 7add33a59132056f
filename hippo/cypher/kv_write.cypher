// $rows: [{id, namespace, key, value}]
UNWIND $rows AS row
MERGE (v:Value {id: row.id})
SET v.namespace = row.namespace, v.key = row.key, v.value = row.value
