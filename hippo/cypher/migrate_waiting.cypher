// Schema version 5 -> 6: mark every record that has no vector (`waiting`, schema.cypher), as the
// writes now do; idempotent, and the schema version moves to 6 only after it. O(records), once.
CALL () {
  MATCH (p:Passage) WHERE p.waiting IS NULL AND NOT EXISTS { MATCH (:Vector {hash: p.embed_hash}) }
  SET p.waiting = true
  RETURN count(*) AS marked
  UNION ALL
  MATCH (e:Entity) WHERE e.waiting IS NULL AND NOT EXISTS { MATCH (:Vector {hash: e.embed_hash}) }
  SET e.waiting = true
  RETURN count(*) AS marked
  UNION ALL
  MATCH ()-[r:RELATES]->() WHERE r.waiting IS NULL AND NOT EXISTS { MATCH (:Vector {hash: r.embed_hash}) }
  SET r.waiting = true
  RETURN count(*) AS marked
}
RETURN sum(marked) AS marked
