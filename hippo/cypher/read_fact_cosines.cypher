// Cosine similarity, (1 + cosine) / 2, of given facts with a query vector, as one record of
// [id, score] pairs (see read_passage_cosines). $ids: [fact id], $query: [float]
UNWIND $ids AS fid
MATCH ()-[r:RELATES {id: fid}]->()
MATCH (v:Vector {hash: r.embed_hash})
RETURN collect([fid, vector.similarity.cosine(v.embedding, $query)]) AS scores
