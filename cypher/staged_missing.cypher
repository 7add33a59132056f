// How many stored records' texts have no staged vector (the swap needs none missing).
CALL () {
  MATCH (p:Passage) RETURN p.embed_hash AS h
  UNION MATCH (e:Entity) RETURN e.embed_hash AS h
  UNION MATCH ()-[r:RELATES]->() RETURN r.embed_hash AS h
}
WITH h WHERE NOT EXISTS { MATCH (:StagedVector {hash: h}) }
RETURN count(h) AS missing
