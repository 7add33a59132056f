// Store-side BM25, step 2: each word's document frequency among the live passages of the reader's
// spaces only (hidden spaces move no statistic), counted up to $cap: a word in half of them or more
// has the floor IDF anyway. $terms: [quoted word], $cap: int, $spaces: [string] or null
UNWIND $terms AS term
CALL (term) {
  CALL db.index.fulltext.queryNodes('passage_words', term) YIELD node
  WITH node
  WHERE node.forgotten_at IS NULL AND ($spaces IS NULL OR node.space IN $spaces)
  WITH node LIMIT $cap
  RETURN count(node) AS df
}
RETURN term, df
