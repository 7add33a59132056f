// Cosine similarity, (1 + cosine) / 2, of given passages with a query vector (none without a vector).
// One record, a list of [id, score] pairs (a pair keeps a null score where collect() would
// drop it): the driver's cost is per record (3,000 passages: 205 ms as rows,
// 89 ms as one record). $ids: [passage id], $query: [float]
UNWIND $ids AS pid
MATCH (p:Passage {id: pid})
MATCH (v:Vector {hash: p.embed_hash})
RETURN collect([pid, vector.similarity.cosine(v.embedding, $query)]) AS scores
