// The swap of a re-embedding, statement by statement in one transaction (after
// staged_missing found none missing): the staged vectors become the (:Vector) nodes,
// labelled by the kinds of record that use them, which puts them in the vector indexes
// (layout: schema_vector_indexes.cypher). Records themselves carry no vector.
MATCH (v:Vector) DETACH DELETE v;
MATCH (v:StagedVector) REMOVE v:StagedVector SET v:Vector;
MATCH (p:Passage) MATCH (v:Vector {hash: p.embed_hash}) WHERE NOT v:PassageVector SET v:PassageVector;
MATCH (e:Entity) MATCH (v:Vector {hash: e.embed_hash}) WHERE NOT v:EntityVector SET v:EntityVector;
MATCH ()-[r:RELATES]->() MATCH (v:Vector {hash: r.embed_hash}) WHERE NOT v:FactVector SET v:FactVector;
MATCH (m:Meta {id: $meta}) REMOVE m.staged_embedding
