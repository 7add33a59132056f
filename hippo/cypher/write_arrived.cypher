// Stored records whose vector this write brings (their embedding had timed out): no longer waiting.
// $passages, $entities, $facts: [id]
CALL () {
  UNWIND $passages AS id
  MATCH (p:Passage {id: id}) WHERE p.waiting IS NOT NULL
  REMOVE p.waiting
  RETURN count(*) AS arrived
  UNION ALL
  UNWIND $entities AS id
  MATCH (e:Entity {id: id}) WHERE e.waiting IS NOT NULL
  REMOVE e.waiting
  RETURN count(*) AS arrived
  UNION ALL
  UNWIND $facts AS id
  MATCH ()-[r:RELATES {id: id}]->() WHERE r.waiting IS NOT NULL
  REMOVE r.waiting
  RETURN count(*) AS arrived
}
RETURN sum(arrived) AS arrived
