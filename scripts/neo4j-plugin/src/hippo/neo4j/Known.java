package hippo.neo4j;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the walks of one reader (its spaces and weights) learnt of the graph at one store revision,
 * kept across calls as hippo.memory.store_cache keeps a reader's edges in the client: after a few
 * hundred recalls most of a walk's nodes are known, and reading a node's relationships, its
 * neighbours' degree counters and the record ids it answers with is most of a walk's cost when
 * they are not. A new revision starts over; at most ``capacity`` nodes of each kind of fact are kept.
 */
final class Known {
    static final long MAX_CAPACITY = 1L << 24;  // as settings.neo4j_read_cache
    private static final int READERS = 4;  // readers kept (hippo.memory.store_reads.CACHES)
    private static final Map<String, Known> BY_READER = new LinkedHashMap<>(8, 0.75f, true);

    final long revision;
    final int capacity;
    final ConcurrentHashMap<Long, Edges> edges = new ConcurrentHashMap<>();
    final ConcurrentHashMap<Long, Double> bounds = new ConcurrentHashMap<>();
    final ConcurrentHashMap<Long, Boolean> seen = new ConcurrentHashMap<>();
    final ConcurrentHashMap<Long, String> ids = new ConcurrentHashMap<>();

    private Known(long revision, int capacity) {
        this.revision = revision;
        this.capacity = capacity;
    }

    /** The reader's Known at this revision, a new one when it moved (or the capacity asked changed). */
    static Known of(String reader, long revision, int capacity) {
        synchronized (BY_READER) {
            Known found = BY_READER.get(reader);
            if (found == null || found.revision != revision || found.capacity != capacity) {
                found = new Known(revision, capacity);
                BY_READER.put(reader, found);
                while (BY_READER.size() > READERS) {
                    BY_READER.remove(BY_READER.keySet().iterator().next());
                }
            }
            return found;
        }
    }

    /** Keeps a node's edges while fewer than ``capacity`` are kept; past that what is kept stays (the nodes
     * the first walks met, the hubs most walks meet among them) until the revision moves. */
    void keep(long node, Edges found) {
        if (edges.size() < capacity) {
            edges.put(node, found);
        }
    }

    /** Keeps one more of a small per-node fact (a counter bound, a record id), as ``keep``. */
    <T> void keep(ConcurrentHashMap<Long, T> facts, long node, T value) {
        if (facts.size() < capacity) {
            facts.put(node, value);
        }
    }

    /** A node's walkable edges for one reader: targets (node ids), whether each is a passage, weights. */
    record Edges(long[] targets, boolean[] toPassage, double[] weights, double strength) {
    }
}
