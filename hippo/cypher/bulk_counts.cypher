// Everything a bulk import wrote, forgotten passages included (to compare with its source).
CALL () { MATCH (n:Document) RETURN count(n) AS documents }
CALL () { MATCH (n:Passage) RETURN count(n) AS passages }
CALL () { MATCH (n:Entity) RETURN count(n) AS entities }
CALL () { MATCH ()-[r:RELATES]->() RETURN count(r) AS facts }
CALL () { MATCH (:Passage)-[r:MENTIONS]->(:Entity) RETURN count(r) AS mentions }
CALL () { MATCH (:Entity)-[r:SYNONYM]->(:Entity) RETURN count(r) AS synonyms }
CALL () { MATCH (n:Vector) RETURN count(n) AS vectors }
RETURN documents, passages, entities, facts, mentions, synonyms, vectors
