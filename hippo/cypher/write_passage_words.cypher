// A page of passages gets its BM25 words (schema 2 -> 3, hippo.store.neo4j.migrate).
// $rows: [{id, words, word_count}]
UNWIND $rows AS row
MATCH (p:Passage {id: row.id})
SET p.words = row.words, p.word_count = row.word_count
