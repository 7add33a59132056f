// Label the vectors of new facts (and of stored ones whose vector arrived late) :FactVector,
// which puts them in the fact_embedding vector index. A text embedded for two kinds (a passage
// and a fact with the same words) is one node with both labels. $hashes: [string]
UNWIND $hashes AS h
MATCH (v:Vector {hash: h})
WHERE NOT v:FactVector
SET v:FactVector
