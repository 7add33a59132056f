// New passages only (the caller filtered stored ids under the meta lock), each
// hung from its document. A passage whose document is not stored matches no row:
// the caller compares `created` with what it sent and aborts the transaction.
// $rows: [{doc_id, seq, props: {id, doc_id, index, title, text, name, space, version, embed_hash,
//                          source, page, headings, words, word_count}}]
//   (source, page, headings may be null: not set; words: the passage's BM25 words, see schema.cypher)
UNWIND $rows AS row
MATCH (d:Document {id: row.doc_id})
CREATE (d)-[:HAS_PASSAGE]->(p:Passage)
SET p = row.props, p.seq = row.seq, p.created_at = datetime(), p.mention_count = 0
RETURN collect(p.id) AS created
