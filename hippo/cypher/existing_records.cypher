// Which of these ids (by kind) and text hashes are stored. Each list may be empty.
CALL () { UNWIND $documents AS id MATCH (n:Document {id: id}) RETURN collect(id) AS documents }
CALL () { UNWIND $passages AS id MATCH (n:Passage {id: id}) RETURN collect(id) AS passages }
CALL () { UNWIND $entities AS id MATCH (n:Entity {id: id}) RETURN collect(id) AS entities }
CALL () { UNWIND $facts AS id MATCH ()-[r:RELATES {id: id}]->() RETURN collect(id) AS facts }
CALL () { UNWIND $hashes AS h MATCH (n:Vector {hash: h}) RETURN collect(h) AS hashes }
RETURN documents, passages, entities, facts, hashes
