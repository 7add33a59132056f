// Staged vectors of another identity than $identity are dropped, and $identity recorded.
MATCH (m:Meta {id: $meta})
WITH m, m.staged_embedding = $identity AS same
SET m.staged_embedding = $identity
WITH same
OPTIONAL MATCH (v:StagedVector)
WHERE NOT coalesce(same, false)
DELETE v
