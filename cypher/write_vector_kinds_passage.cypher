// Label the vectors of new passages (and of stored ones whose vector arrived late) :PassageVector,
// which puts them in the passage_embedding vector index. A text embedded for two kinds (a passage
// and a fact with the same words) is one node with both labels. $hashes: [string]
UNWIND $hashes AS h
MATCH (v:Vector {hash: h})
WHERE NOT v:PassageVector
SET v:PassageVector
