UNWIND $ids AS id
MATCH (v:Value {id: id})
DELETE v
