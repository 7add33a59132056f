// Records written without a vector (an embedding that timed out), waiting for one, as
// [kind, id]: what the in-process state keeps as `unembedded`. A scan of every record: the
// background embedding runs it only after a write that could not embed.
CALL () {
  MATCH (p:Passage) WHERE NOT EXISTS { MATCH (:Vector {hash: p.embed_hash}) }
  RETURN 'passage' AS kind, p.id AS id
  UNION ALL
  MATCH (e:Entity) WHERE NOT EXISTS { MATCH (:Vector {hash: e.embed_hash}) }
  RETURN 'entity' AS kind, e.id AS id
  UNION ALL
  MATCH (:Entity)-[r:RELATES]->(:Entity) WHERE NOT EXISTS { MATCH (:Vector {hash: r.embed_hash}) }
  RETURN 'fact' AS kind, r.id AS id
}
RETURN kind, id
