// Store-side PPR in one call where the server has hippo's procedure (scripts/neo4j-plugin, built and
// installed by scripts/neo4j start): the local push over the edges read_neighbours.cypher reads, with
// its weights and visibility, walked inside the database instead of one round trip a wave.
// One record: the pushed nodes (node ids, record ids, passage or not, scores), pushes, edges read, and
// whether the walk ended below its threshold (else it stopped at $max_pushes).
// $seeds: [[record id, is a passage, weight]], $damping, $epsilon, $spaces: [string] or null,
// $everything: bool, $mention_weight, $relation_weight, $max_pushes, $cache_nodes (nodes whose edges the
// server keeps for this reader's later walks at this store revision, as the client's cache would)
CALL hippo.push($seeds, $damping, $epsilon, $spaces, $everything, $mention_weight, $relation_weight, $max_pushes,
                $cache_nodes)
YIELD nodes, ids, passages, scores, pushes, edges, complete, version
RETURN nodes, ids, passages, scores, pushes, edges, complete, version
