// The nodes a frontier read named by node id (read_neighbours.cypher, which says why id()) and the
// reader's cache did not know: each one's record id and strength over every edge, by the expressions
// read_strengths.cypher uses (so the same floats; null in a store not migrated to the counters).
// A node id names one node for as long as it exists, and hippo never deletes a passage or an
// entity, so a reader keeps what it learnt here across revisions (hippo.memory.store_names.Names).
// $keys: [node id], $mention_weight, $relation_weight
UNWIND $keys AS key
MATCH (n) WHERE id(n) = key
RETURN collect([key, n.id, CASE WHEN n:Passage THEN $mention_weight * n.mention_count
                                ELSE $mention_weight * n.mention_count + $relation_weight * n.fact_count
                                     + n.synonym_weight END]) AS nodes
