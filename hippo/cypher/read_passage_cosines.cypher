// Cosine similarity, (1 + cosine) / 2, of given passages with a query vector (none without a vector).
// $ids: [passage id], $query: [float]
UNWIND $ids AS pid
MATCH (p:Passage {id: pid})
MATCH (v:Vector {hash: p.embed_hash})
RETURN pid AS id, vector.similarity.cosine(v.embedding, $query) AS score
