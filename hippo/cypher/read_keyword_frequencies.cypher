// Store-side BM25, step 2: each word's document frequency among the live passages of the reader's
// spaces only (hidden spaces move no statistic), counted up to $cap: a word in half of them or more
// has the floor IDF anyway. $everything: every passage the index holds is visible to the reader, so
// the index's own matches are counted, none of them looked at ($options {limit: $cap}; 100k
// synthetic passages: ~2x faster, README); else $options is {}.
// $terms: [quoted word], $cap: int, $spaces: [string] or null, $everything: bool, $options: map
UNWIND $terms AS term
CALL (term) {
  CALL db.index.fulltext.queryNodes('passage_words', term, $options) YIELD node
  WITH node
  WHERE $everything OR (node.forgotten_at IS NULL AND ($spaces IS NULL OR node.space IN $spaces))
  WITH node LIMIT $cap
  RETURN count(node) AS df
}
RETURN term, df
