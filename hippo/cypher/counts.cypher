CALL () { MATCH (n:Document) RETURN count(n) AS documents }
CALL () { MATCH (n:Passage) WHERE n.forgotten_at IS NULL RETURN count(n) AS passages }
CALL () { MATCH (n:Entity) RETURN count(n) AS entities }
CALL () { MATCH ()-[r:RELATES]->() RETURN count(r) AS facts }
CALL () { MATCH (:Passage)-[r:MENTIONS]->(:Entity) RETURN count(r) AS mentions }
CALL () { MATCH (:Entity)-[r:SYNONYM]->(:Entity) RETURN count(r) AS synonyms }
RETURN documents, passages, entities, facts, mentions, synonyms
