// Cosine similarity, (1 + cosine) / 2, of given facts with a query vector. $ids: [fact id], $query: [float]
UNWIND $ids AS fid
MATCH ()-[r:RELATES {id: fid}]->()
MATCH (v:Vector {hash: r.embed_hash})
RETURN fid AS id, vector.similarity.cosine(v.embedding, $query) AS score
