// Schema for hippo's Neo4j store. Run statement by statement on open; every
// statement is idempotent (IF NOT EXISTS), so opening twice is harmless.
CREATE CONSTRAINT hippo_meta_id IF NOT EXISTS FOR (n:Meta) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT document_id IF NOT EXISTS FOR (n:Document) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT passage_id IF NOT EXISTS FOR (n:Passage) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT vector_hash IF NOT EXISTS FOR (n:Vector) REQUIRE n.hash IS UNIQUE;
// Vectors of a re-embedding (`hippo reembed`) until they are swapped in.
CREATE CONSTRAINT staged_vector_hash IF NOT EXISTS FOR (n:StagedVector) REQUIRE n.hash IS UNIQUE;
// The key-value area: id is namespace + NUL + key.
CREATE CONSTRAINT value_id IF NOT EXISTS FOR (n:Value) REQUIRE n.id IS UNIQUE;
// One (:Space) per space a passage was written to: its live passages and their summed BM25 words,
// kept by every write (schema version 5; migrate_spaces.cypher fills older stores), so a reader's
// statistics and the live spaces are read in O(spaces), not O(passages), once a store revision.
CREATE CONSTRAINT space_name IF NOT EXISTS FOR (n:Space) REQUIRE n.name IS UNIQUE;
// One (:Change) per recent write: the nodes it changed (write_change.cypher), read by store-side
// readers to keep the edges of every other node they fetched across revisions.
CREATE INDEX change_revision IF NOT EXISTS FOR (n:Change) ON (n.revision);
// A fact is one (:Entity)-[:RELATES]->(:Entity) relationship; its id is unique too.
CREATE CONSTRAINT fact_id IF NOT EXISTS FOR ()-[r:RELATES]-() REQUIRE r.id IS UNIQUE;
CREATE INDEX passage_seq IF NOT EXISTS FOR (n:Passage) ON (n.seq);
CREATE INDEX entity_seq IF NOT EXISTS FOR (n:Entity) ON (n.seq);
CREATE INDEX passage_space IF NOT EXISTS FOR (n:Passage) ON (n.space);
CREATE INDEX document_space IF NOT EXISTS FOR (n:Document) ON (n.space);
CREATE INDEX passage_doc IF NOT EXISTS FOR (n:Passage) ON (n.doc_id);
CREATE INDEX entity_name IF NOT EXISTS FOR (n:Entity) ON (n.name);
CREATE INDEX fact_passage IF NOT EXISTS FOR ()-[r:RELATES]-() ON (r.passage_id);
// A record's vector is the (:Vector {hash}) whose hash is its embed_hash; these make the way back
// from a vector-index hit to its records an index lookup too.
CREATE INDEX passage_embed_hash IF NOT EXISTS FOR (n:Passage) ON (n.embed_hash);
CREATE INDEX entity_embed_hash IF NOT EXISTS FOR (n:Entity) ON (n.embed_hash);
CREATE INDEX fact_embed_hash IF NOT EXISTS FOR ()-[r:RELATES]-() ON (r.embed_hash);
// A record written without a vector (its embedding timed out) carries waiting = true until a later
// write brings the vector (schema version 6; migrate_waiting.cypher marks older stores), so
// read_unembedded.cypher finds what still waits in O(waiting), not by looking up every record's vector.
CREATE INDEX passage_waiting IF NOT EXISTS FOR (n:Passage) ON (n.waiting);
CREATE INDEX entity_waiting IF NOT EXISTS FOR (n:Entity) ON (n.waiting);
CREATE INDEX fact_waiting IF NOT EXISTS FOR ()-[r:RELATES]-() ON (r.waiting);
// Keyword search (BM25 in Lucene) over what people read. standard-folding: lower case, diacritics
// removed, English stop words dropped; titles are searched as phrases here (read_title_candidates).
CREATE FULLTEXT INDEX passage_text IF NOT EXISTS FOR (n:Passage) ON EACH [n.title, n.text]
  OPTIONS {indexConfig: {`fulltext.analyzer`: 'standard-folding'}};
// Store-side BM25 (read_keyword_*.cypher): each passage's words as hippo's own BM25 counts them
// (hippo.text.keyword_tokens, space-separated in `words`), split on white space only, so Lucene's
// postings and document frequencies are those of the in-process index: no stop word dropped,
// "Blekinge's" is "blekinge" and "s" on both sides.
CREATE FULLTEXT INDEX passage_words IF NOT EXISTS FOR (n:Passage) ON EACH [n.words]
  OPTIONS {indexConfig: {`fulltext.analyzer`: 'unicode_whitespace'}};
// Degree counters, kept by every write (schema version 4; migrate_walks.cypher fills older
// stores): a passage's mention_count is the entities it mentions; an entity's, the passages
// mentioning it, its fact_count the facts at either end, its synonym_weight the sum of its
// SYNONYM scores. Forgotten passages and every space count, so the strength they give
// (mention_weight * mention_count + relation_weight * fact_count + synonym_weight) is the
// in-process projection's: a bound of any reader's, which schedules store-side pushes without
// reading a node's edges first (read_neighbours.cypher). A fact (RELATES) keeps its passage's
// space and forgotten_at, so a walk sees whether it may follow it without looking its passage up.
// Labels, relationship types and property keys that may exist on no record yet (a new store,
// forgotten passages, an unbound model): registering them keeps the server (and the Browser)
// from warning "... does not exist".
CALL db.createProperty('forgotten_at');
CALL db.createProperty('forgotten_reason');
CALL db.createProperty('kind');
CALL db.createProperty('embedding_model');
CALL db.createProperty('embedding_dim');
CALL db.createProperty('embedding_backend');
CALL db.createProperty('staged_embedding');
CALL db.createProperty('embedding');
CALL db.createProperty('page');
CALL db.createProperty('headings');
CALL db.createProperty('words');
CALL db.createProperty('word_count');
CALL db.createProperty('mention_count');
CALL db.createProperty('fact_count');
CALL db.createProperty('synonym_weight');
CALL db.createProperty('live_passages');
CALL db.createProperty('live_words');
CALL db.createProperty('nodes');
CALL db.createProperty('waiting');
CALL db.createLabel('Change');
CALL db.createLabel('PassageVector');
CALL db.createLabel('EntityVector');
CALL db.createLabel('FactVector');
CALL db.createRelationshipType('HAS_PASSAGE');
CALL db.createRelationshipType('MENTIONS');
CALL db.createRelationshipType('RELATES');
CALL db.createRelationshipType('SYNONYM');
CALL db.createProperty('score');
CALL db.createProperty('embed_hash');
CALL db.createProperty('vector');
CALL db.createProperty('source');
CALL db.createProperty('meta');
CALL db.createProperty('version');
