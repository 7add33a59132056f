package hippo.neo4j;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;
import org.neo4j.procedure.TerminationGuard;

/**
 * hippo's local push inside the database (hippo.store.neo4j.push): one call walks what a store-side
 * recall's frontier waves read one round trip at a time (hippo/cypher/read_neighbours.cypher), with
 * the same edges, weights and visibility, pushed in the same waves (``Walker``). Each score is short
 * of the exact one by less than epsilon times a strength, as theirs.
 *
 * When a node is pushed depends on what the reader sees only: its residual must reach epsilon
 * times its walkable strength (at least 1). The store's degree counters bound that strength from
 * above (they count hidden edges too), so a node is read only when its residual lies between the
 * two bounds; a reader of everything (no space hidden, nothing forgotten) walks every edge, so
 * the counters are its strength and nothing is read before a push.
 *
 * Only the server's public procedure API is used; no setting needs to allow it.
 */
public final class Push {
    public static final String VERSION = "hippo.push 1";
    private static final Label META = Label.label("Meta");

    @Context
    public Transaction tx;

    @Context
    public TerminationGuard guard;

    /** One record: the nodes the walk pushed (their node ids, record ids, kinds and scores). */
    public static final class Walk {
        public List<Long> nodes;
        public List<String> ids;
        public List<Boolean> passages;
        public List<Double> scores;
        public long pushes;
        public long edges;
        public boolean complete;
        public String version;
    }

    @Procedure(name = "hippo.push", mode = Mode.READ)
    @Description(VERSION + ": personalized PageRank by local push from a weighted reset, over the edges a reader "
            + "may walk (hippo store-side recall)")
    public Stream<Walk> push(@Name("seeds") List<List<Object>> seeds, @Name("damping") double damping,
                             @Name("epsilon") double epsilon, @Name("spaces") List<String> spaces,
                             @Name("everything") boolean everything, @Name("mentionWeight") double mentionWeight,
                             @Name("relationWeight") double relationWeight,
                             @Name(value = "maxPushes", defaultValue = "10000000") long maxPushes,
                             @Name(value = "cacheNodes", defaultValue = "0") long cacheNodes) {
        if (!(damping > 0 && damping < 1)) {
            throw new IllegalArgumentException("damping must lie in (0, 1), got " + damping);
        }
        if (!(epsilon > 0)) {
            throw new IllegalArgumentException("epsilon must be positive, got " + epsilon);
        }
        if (cacheNodes < 0 || cacheNodes > Known.MAX_CAPACITY) {
            throw new IllegalArgumentException("cacheNodes must lie in 0 .. " + Known.MAX_CAPACITY + ", got "
                    + cacheNodes);
        }
        Set<String> readable = spaces == null ? null : new TreeSet<>(spaces);
        boolean all = everything && spaces == null;
        Known known = Known.of(readable + "|" + all + "|" + mentionWeight + "|" + relationWeight, revision(),
                (int) cacheNodes);
        Walker walker = new Walker(tx, known, readable, all, mentionWeight, relationWeight);
        walker.reset(seeds);
        Walk walk = new Walk();
        walk.complete = walker.run(damping, epsilon, maxPushes, guard);
        walker.answer(walk);
        walk.version = VERSION;
        return Stream.of(walk);
    }

    /** The store's revision, which every hippo write moves (meta_bump.cypher). */
    private long revision() {
        Node meta = tx.findNode(META, "id", "hippo");
        Object revision = meta == null ? null : meta.getProperty("revision", null);
        return revision instanceof Number ? ((Number) revision).longValue() : 0L;
    }
}
