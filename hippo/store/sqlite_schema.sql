-- The embedded store. One file, WAL journal, one transaction per batch.
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
PRAGMA foreign_keys = ON;

CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS documents (
  id      TEXT PRIMARY KEY,
  title   TEXT NOT NULL DEFAULT '',
  source  TEXT,
  space   TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 1,
  meta    TEXT NOT NULL DEFAULT '{}',
  kind    TEXT NOT NULL DEFAULT 'document',  -- 'document' or 'memory' (remembered)
  forgotten_at     TEXT,                     -- a tombstone, not a delete
  forgotten_reason TEXT
);

CREATE TABLE IF NOT EXISTS passages (
  id           TEXT PRIMARY KEY,
  doc_id       TEXT NOT NULL REFERENCES documents(id),
  idx          INTEGER NOT NULL,
  title        TEXT NOT NULL DEFAULT '',
  text         TEXT NOT NULL,
  space        TEXT NOT NULL,
  version      INTEGER NOT NULL DEFAULT 1,
  forgotten_at TEXT,
  embed_hash   TEXT NOT NULL,
  forgotten_reason TEXT,                     -- 'superseded' by a newer version, 'forgotten', ...
  created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  source       TEXT,                         -- where it sits in its source (hippo.documents):
  page         INTEGER,                      -- the page it starts on (PDF, PPTX slide)
  headings     TEXT                          -- JSON list, the heading path above it
);
CREATE INDEX IF NOT EXISTS documents_space ON documents(space);
CREATE INDEX IF NOT EXISTS passages_doc ON passages(doc_id);
CREATE INDEX IF NOT EXISTS passages_space ON passages(space);

CREATE VIRTUAL TABLE IF NOT EXISTS passage_fts USING fts5(
  title, text, tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE IF NOT EXISTS entities (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  key        TEXT NOT NULL,
  type       TEXT NOT NULL,
  embed_hash TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS facts (
  id         TEXT PRIMARY KEY,
  subject_id TEXT NOT NULL REFERENCES entities(id),
  predicate  TEXT NOT NULL,
  object_id  TEXT NOT NULL REFERENCES entities(id),
  passage_id TEXT NOT NULL REFERENCES passages(id),
  subject    TEXT NOT NULL,
  object     TEXT NOT NULL,
  embed_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS facts_passage ON facts(passage_id);

CREATE TABLE IF NOT EXISTS mentions (
  passage_id TEXT NOT NULL REFERENCES passages(id),
  entity_id  TEXT NOT NULL REFERENCES entities(id),
  PRIMARY KEY (passage_id, entity_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_entity ON mentions(entity_id);

CREATE TABLE IF NOT EXISTS synonyms (
  a     TEXT NOT NULL REFERENCES entities(id),
  b     TEXT NOT NULL REFERENCES entities(id),
  score REAL NOT NULL,
  PRIMARY KEY (a, b)
) WITHOUT ROWID;

-- The embedding cache: one vector per distinct text, for the model named in meta.
-- A rowid table: a 1.5 KB vector does not fit a WITHOUT ROWID leaf cell, so there every
-- row took an overflow page (5 KB a vector, measured; 2 KB here). Older stores keep theirs.
CREATE TABLE IF NOT EXISTS vectors (
  hash   TEXT PRIMARY KEY,
  vector BLOB NOT NULL
);

-- Re-embedding (`hippo reembed`): vectors of the new model or backend, named in meta 'staged_embedding',
-- swapped into `vectors` by one transaction once every record's text has one.
CREATE TABLE IF NOT EXISTS vectors_staged (
  hash   TEXT PRIMARY KEY,
  vector BLOB NOT NULL
) WITHOUT ROWID;

-- Small values that are not graph records: per-space settings, registries, caches.
CREATE TABLE IF NOT EXISTS kv (
  namespace TEXT NOT NULL,
  key       TEXT NOT NULL,
  value     TEXT NOT NULL,
  PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
