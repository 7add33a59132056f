// Store-side PPR: the visible edges at one push wave's frontier, in one round trip, weighted as the
// in-process projection weighs them. A passage (live, in the reader's spaces) -> the entities it
// mentions; an entity -> the visible passages mentioning it, the other end of each fact read from a
// visible passage (one edge per fact, none to itself; a fact keeps its passage's space and
// forgotten_at, so no passage is looked up), and its synonyms when both ends are visible.
// Targets come as node ids, so no property of a target is read here: that was 61 % of the
// server's time at 100k passages (results/frontier_reads.md); the reader's cache knows most targets
// by node id already and reads only the others' ids and strengths (read_keyed_nodes.cypher).
// id() is deprecated in Neo4j 5 without a replacement; elementId() costs the server the same here but
// hands the client ~16k strings a recall at 100k passages to decode and hash (13 ms of its ~80 ms of
// CPU, results/store_read-stop52.md), where integers go straight into a numpy table
// (hippo.int_map). Were id() ever removed, elementId() here and in read_keyed_nodes.cypher is the
// way back. Like an element id, a node id names one node while it exists; hippo deletes no passage
// and no entity.
// No target's label is checked either: MENTIONS only ever goes from a passage to an entity and RELATES
// from an entity to an entity, and a label check reads the target's node record (~9 % of the
// server's time on the 100k store, the same edges for 40 recalls' frontiers).
// One record (the driver's cost is per record) of one flat list per owner found:
// [key, e, p, r, s, <e + p + r + s target node ids>, <s synonym scores>] (hippo.store.neo4j.frontier:
// the driver builds a Python list per list it decodes, and five nested lists an owner cost the client
// ~1.7x the CPU of one, benchmarks/frontier_reads.py).
// $everything: the reader sees every space and no passage is forgotten, so an entity is visible when
// any passage mentions it (its degree counter, not a look at its passages: ~20 % of a wave's time),
// and no passage's or fact's own visibility is read (100k passages: ~9 % less time waited on these reads).
// Owners come by node id where the reader knows it (a node it met as a target before: O(1), no index
// seek; at 100k passages ~30 % less of the server's time on a wave's read than by record id), else
// by record id through the property index (a recall's seeds). A node found by id is checked for its
// label (read with its record anyway), so a foreign write cannot turn it into another kind.
// Owners come as flat lists, each with its keys beside it (the caller's integer for an owner, echoed): a
// pair an owner cost the client a list to build and pack (hippo.store.neo4j.frontier.Owners).
// $passage_ids, $entity_ids: [record id] with $passage_id_keys, $entity_id_keys: [int];
// $passage_nodes, $entity_nodes: [node id] with $passage_node_keys, $entity_node_keys: [int];
// $spaces: [string] or null, $everything: bool
CALL () {
  CALL () {
    UNWIND range(0, size($passage_ids) - 1) AS i
    MATCH (p:Passage {id: $passage_ids[i]})
    RETURN $passage_id_keys[i] AS owner, p
    UNION ALL
    UNWIND range(0, size($passage_nodes) - 1) AS i
    MATCH (p) WHERE id(p) = $passage_nodes[i] AND p:Passage
    RETURN $passage_node_keys[i] AS owner, p
  }
  WITH owner, p
  WHERE p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)
  WITH owner, [(p)-[:MENTIONS]->(e) | id(e)] AS entities
  RETURN [owner, size(entities), 0, 0, 0] + entities AS edges
  UNION ALL
  CALL () {
    UNWIND range(0, size($entity_ids) - 1) AS i
    MATCH (e:Entity {id: $entity_ids[i]})
    RETURN $entity_id_keys[i] AS owner, e
    UNION ALL
    UNWIND range(0, size($entity_nodes) - 1) AS i
    MATCH (e) WHERE id(e) = $entity_nodes[i] AND e:Entity
    RETURN $entity_node_keys[i] AS owner, e
  }
  WITH owner, e, CASE WHEN $everything THEN e.mention_count > 0 ELSE EXISTS {
    MATCH (q:Passage)-[:MENTIONS]->(e)
    WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
  } END AS seen
  WITH owner,
    [(p)-[:MENTIONS]->(e)
       WHERE $everything OR (p.forgotten_at IS NULL AND ($spaces IS NULL OR p.space IN $spaces)) | id(p)]
      AS passages,
    [(e)-[r:RELATES]-(o) WHERE o <> e AND ($everything OR (r.forgotten_at IS NULL AND r.space IS NOT NULL
       AND ($spaces IS NULL OR r.space IN $spaces))) | id(o)] AS relations,
    [(e)-[s:SYNONYM]-(o:Entity) WHERE seen AND (CASE WHEN $everything THEN o.mention_count > 0 ELSE EXISTS {
       MATCH (q:Passage)-[:MENTIONS]->(o)
       WHERE q.forgotten_at IS NULL AND ($spaces IS NULL OR q.space IN $spaces)
     } END) | [id(o), s.score]] AS synonyms
  RETURN [owner, 0, size(passages), size(relations), size(synonyms)] + passages + relations
         + [s IN synonyms | s[0]] + [s IN synonyms | s[1]] AS edges
}
RETURN collect(edges) AS edges
