// The swap of a re-embedding, statement by statement in one transaction (after
// staged_missing found none missing): the staged vectors become the embedding cache,
// and every record's vector-index property is set from them.
MATCH (v:Vector) DETACH DELETE v;
MATCH (v:StagedVector) REMOVE v:StagedVector SET v:Vector;
MATCH (n:Passage) MATCH (v:Vector {hash: n.embed_hash})
CALL db.create.setNodeVectorProperty(n, 'embedding', v.embedding);
MATCH (n:Entity) MATCH (v:Vector {hash: n.embed_hash})
CALL db.create.setNodeVectorProperty(n, 'embedding', v.embedding);
MATCH ()-[n:RELATES]->() MATCH (v:Vector {hash: n.embed_hash})
CALL db.create.setRelationshipVectorProperty(n, 'embedding', v.embedding);
MATCH (v:Vector) REMOVE v.embedding;
MATCH (m:Meta {id: $meta}) REMOVE m.staged_embedding
