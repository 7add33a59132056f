// Schema version 1 -> 2: vectors move off the records people browse (see
// schema_vector_indexes.cypher for the layout). Version 1 kept a float list `embedding` on
// every Passage, Entity and RELATES (and the vector indexes on those); version 2 keeps it on
// the (:Vector) nodes only, labelled by the kinds of records that use them.
// Before these statements the store has given every Vector its `embedding` (from its bytes).
// Each statement is idempotent and commits in batches, so a migration cut short is finished
// by the next open; the schema version moves to 2 only after the last one.
MATCH (p:Passage) WHERE p.embed_hash IS NOT NULL
CALL (p) { MATCH (v:Vector {hash: p.embed_hash}) WHERE NOT v:PassageVector SET v:PassageVector }
  IN TRANSACTIONS OF 5000 ROWS;
MATCH (e:Entity) WHERE e.embed_hash IS NOT NULL
CALL (e) { MATCH (v:Vector {hash: e.embed_hash}) WHERE NOT v:EntityVector SET v:EntityVector }
  IN TRANSACTIONS OF 5000 ROWS;
MATCH ()-[r:RELATES]->() WHERE r.embed_hash IS NOT NULL
CALL (r) { MATCH (v:Vector {hash: r.embed_hash}) WHERE NOT v:FactVector SET v:FactVector }
  IN TRANSACTIONS OF 5000 ROWS;
MATCH (p:Passage) WHERE p.embedding IS NOT NULL
CALL (p) { REMOVE p.embedding } IN TRANSACTIONS OF 5000 ROWS;
MATCH (e:Entity) WHERE e.embedding IS NOT NULL
CALL (e) { REMOVE e.embedding } IN TRANSACTIONS OF 5000 ROWS;
MATCH ()-[r:RELATES]->() WHERE r.embedding IS NOT NULL
CALL (r) { REMOVE r.embedding } IN TRANSACTIONS OF 5000 ROWS;
