"""Neo4j as the system of record, behind the same protocol as the embedded store.

Graph shape (what a person sees in the Neo4j Browser)::

    (:Document {title})-[:HAS_PASSAGE]->(:Passage {name, title, text})-[:MENTIONS]->(:Entity {name})
    (:Entity)-[:RELATES {id, predicate, passage_id, space}]->(:Entity) one relationship per fact
    (:Entity)-[:SYNONYM {score}]->(:Entity)                            once per pair, a < b
    (:Vector:PassageVector {hash, vector, dim, embedding})             one per embedded text (see below)
    (:StagedVector {hash, vector, dim, embedding})                     a re-embedding until its swap
    (:Meta {id: 'hippo', revision, seq, embedding_model, embedding_dim, embedding_backend})
    (:Value {id, namespace, key, value})                               the small key-value area

Vectors never sit on the records people browse. A record (Passage, Entity,
RELATES) names its vector by ``embed_hash``; the (:Vector) node with that
``hash`` holds it twice, as float32 bytes (``vector``, what hippo loads) and
as a float list (``embedding``, what the vector indexes read), and carries the
label of every kind that uses it (:PassageVector, :EntityVector, :FactVector),
one vector index per label (``hippo/cypher/schema_vector_indexes.cypher``). Stores of
schema version 1 are migrated on open (``hippo/cypher/migrate_vectors.cypher``), and of
version 2 given their BM25 words (``words``, for the ``passage_words`` full-text index), and
of version 3 what store-side walks read at a node: degree counters on passages and entities
(``mention_count``, ``fact_count``, ``synonym_weight``) and each fact's passage's ``space``
and ``forgotten_at`` (``hippo/cypher/migrate_walks.cypher``).

Forgetting sets ``forgotten_at``/``forgotten_reason`` on passages and ``forgotten_at``
on their facts (and on the document for a whole-document forget); every graph read
follows live passages only, so nothing is deleted and ``revive`` undoes it.

Every Cypher statement lives in ``hippo/cypher/<name>.cypher`` (package data;
``HIPPO_CYPHER_DIR`` overrides). The modules, one job each:

- ``connection``: the URL, the driver, statements run under one error guard;
- ``schema``: constraints, indexes, the meta node, the version check on open;
- ``migrate``: upgrades of stores an older hippo wrote;
- ``writer``: one ``write`` as one explicit transaction (``execute_write``, retried
  as a unit on transient errors);
- ``store``: ``Neo4jStore`` and the protocol's reads; ``records``: rows -> records;
- ``embeddings``: the bound embedding model, re-embedding; ``vectors``: how a vector is kept;
- ``bulk``: the bulk initial load (``hippo neo4j import``): ``bulk_export`` writes a SQLite store
  as CSV files, ``local_server`` stops and starts the server and runs ``neo4j-admin``.
"""

from hippo.store.cypher import cypher_dir
from hippo.store.neo4j.connection import check_server_version
from hippo.store.neo4j.store import Neo4jStore, create_indexes

__all__ = ["Neo4jStore", "check_server_version", "create_indexes", "cypher_dir"]
