// New passages only (the caller filtered stored ids under the meta lock), each
// hung from its document, and counted live in their space. A passage whose document is not stored
// matches no row: the caller compares `created` with what it sent and aborts the transaction.
// $rows: [{doc_id, seq, props: {id, doc_id, index, title, text, name, space, version, embed_hash,
//                          source, page, headings, words, word_count}}]
//   (source, page, headings may be null: not set; words: the passage's BM25 words, see schema.cypher)
UNWIND $rows AS row
MATCH (d:Document {id: row.doc_id})
CREATE (d)-[:HAS_PASSAGE]->(p:Passage)
SET p = row.props, p.seq = row.seq, p.created_at = datetime(), p.mention_count = 0
WITH collect(p) AS created
CALL (created) {
  UNWIND created AS p
  WITH p.space AS name, count(p) AS passages, sum(coalesce(p.word_count, 0)) AS words
  MERGE (s:Space {name: name})
  SET s.live_passages = coalesce(s.live_passages, 0) + passages, s.live_words = coalesce(s.live_words, 0) + words
}
RETURN [p IN created | p.id] AS created
