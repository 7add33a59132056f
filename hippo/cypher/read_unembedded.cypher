// Records written without a vector (an embedding that timed out), waiting for one, as
// [kind, id]: what the in-process state keeps as `unembedded`. The writes mark them (`waiting`,
// schema.cypher), so this reads the marked ones through their indexes; a mark can outlive its wait
// (another record of the same text brought the vector), so each is checked.
CALL () {
  MATCH (p:Passage) WHERE p.waiting = true AND NOT EXISTS { MATCH (:Vector {hash: p.embed_hash}) }
  RETURN 'passage' AS kind, p.id AS id
  UNION ALL
  MATCH (e:Entity) WHERE e.waiting = true AND NOT EXISTS { MATCH (:Vector {hash: e.embed_hash}) }
  RETURN 'entity' AS kind, e.id AS id
  UNION ALL
  MATCH ()-[r:RELATES]->() WHERE r.waiting = true AND NOT EXISTS { MATCH (:Vector {hash: r.embed_hash}) }
  RETURN 'fact' AS kind, r.id AS id
}
RETURN kind, id
