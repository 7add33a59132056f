package hippo.neo4j;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.ResourceIterable;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;
import org.neo4j.procedure.TerminationGuard;

/**
 * hippo's local push inside the database: one call walks what a store-side recall's frontier
 * waves read one round trip at a time (hippo/cypher/read_neighbours.cypher), with the same edges,
 * weights and visibility, pushed in the same waves (Walker.run says why not a sequential queue).
 * Each score is short of the exact one by less than epsilon times a strength, as theirs.
 *
 * When a node is pushed depends on what the reader sees only: its residual must reach epsilon
 * times its walkable strength (at least 1). The store's degree counters bound that strength from
 * above (they count hidden edges too), so a node is read only when its residual lies between the
 * two bounds; a reader of everything (no space hidden, nothing forgotten) walks every edge, so
 * the counters are its strength and nothing is read before a push.
 */
@SuppressWarnings("removal")  // getId and getNodeById: the node ids read_neighbours.cypher says why hippo uses
public final class Push {
    public static final String VERSION = "hippo.push 1";

    private static final Label PASSAGE = Label.label("Passage");
    private static final Label ENTITY = Label.label("Entity");
    private static final RelationshipType MENTIONS = RelationshipType.withName("MENTIONS");
    private static final RelationshipType RELATES = RelationshipType.withName("RELATES");
    private static final RelationshipType SYNONYM = RelationshipType.withName("SYNONYM");

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
        if (cacheNodes < 0 || cacheNodes > MAX_CACHE) {
            throw new IllegalArgumentException("cacheNodes must lie in 0 .. " + MAX_CACHE + ", got " + cacheNodes);
        }
        TreeSet<String> readable = spaces == null ? null : new TreeSet<>(spaces);
        boolean all = everything && spaces == null;
        String reader = readable + "|" + all + "|" + mentionWeight + "|" + relationWeight;
        Known known = known(reader, revision(), (int) cacheNodes);
        Walker walker = new Walker(tx, known, readable, all, mentionWeight, relationWeight);
        walker.reset(seeds);
        boolean complete = walker.run(damping, epsilon, maxPushes, guard);
        return Stream.of(walker.answer(complete));
    }

    /** What one walk knows of one node. */
    private static final class Vertex {
        final long id;
        final boolean passage;
        double residual;
        double estimate;
        boolean queued;  // in the frontier being built
        Edges edges;  // its walkable edges, read on first need

        Vertex(long id, boolean passage) {
            this.id = id;
            this.passage = passage;
        }
    }

    /** A node's walkable edges for one reader: targets (node ids), whether each is a passage, weights. */
    private record Edges(long[] targets, boolean[] toPassage, double[] weights, double strength) {
    }

    /**
     * What the walks of one reader (its spaces and weights) learnt of the graph at one store revision,
     * kept across calls as hippo.memory.store_cache keeps a reader's edges in the client: after a few
     * hundred recalls most of a walk's nodes are known, and reading a node's relationships and its
     * neighbours' degree counters is most of a walk's cost. A new revision starts over. At most
     * ``capacity`` nodes' edges; past that it starts over too.
     */
    private static final class Known {
        final long revision;
        final int capacity;
        final ConcurrentHashMap<Long, Edges> edges = new ConcurrentHashMap<>();
        final ConcurrentHashMap<Long, Double> bounds = new ConcurrentHashMap<>();
        final ConcurrentHashMap<Long, Boolean> seen = new ConcurrentHashMap<>();

        Known(long revision, int capacity) {
            this.revision = revision;
            this.capacity = capacity;
        }

        void keep(long id, Edges found) {
            if (capacity <= 0) {
                return;
            }
            if (edges.size() >= capacity) {
                edges.clear();
                bounds.clear();
                seen.clear();
            }
            edges.put(id, found);
        }
    }

    private static final long MAX_CACHE = 1L << 24;  // as settings.neo4j_read_cache
    private static final Label META = Label.label("Meta");

    /** The store's revision, which every hippo write moves (meta_bump.cypher). */
    private long revision() {
        Node meta = tx.findNode(META, "id", "hippo");
        Object revision = meta == null ? null : meta.getProperty("revision", null);
        return revision instanceof Number ? ((Number) revision).longValue() : 0L;
    }

    private static final int READERS = 4;  // readers whose Known is kept (hippo.memory.store_reads.CACHES)
    private static final Map<String, Known> KNOWN = new LinkedHashMap<>(8, 0.75f, true);

    private static Known known(String reader, long revision, int capacity) {
        synchronized (KNOWN) {
            Known found = KNOWN.get(reader);
            if (found == null || found.revision != revision || found.capacity != capacity) {
                found = new Known(revision, capacity);
                KNOWN.put(reader, found);
                while (KNOWN.size() > READERS) {
                    KNOWN.remove(KNOWN.keySet().iterator().next());
                }
            }
            return found;
        }
    }

    private static final class Walker {
        private final Transaction tx;
        private final Set<String> spaces;
        private final boolean everything;
        private final double mentionWeight;
        private final double relationWeight;
        private final Known known;
        private final Map<Long, Vertex> vertices = new HashMap<>();
        private final List<Vertex> restartAt = new ArrayList<>();
        private final List<Double> restart = new ArrayList<>();
        private long pushes;
        private long edges;

        Walker(Transaction tx, Known known, Set<String> spaces, boolean everything, double mentionWeight,
               double relationWeight) {
            this.tx = tx;
            this.known = known;
            this.spaces = spaces;
            this.everything = everything;
            this.mentionWeight = mentionWeight;
            this.relationWeight = relationWeight;
        }

        /** Seeds as [record id, is a passage, weight]; weights are normalized to sum to 1. */
        void reset(List<List<Object>> seeds) {
            double total = 0;
            for (List<Object> seed : seeds) {
                if (seed == null || seed.size() != 3) {
                    throw new IllegalArgumentException("a seed is [record id, is a passage, weight]");
                }
                Object weight = seed.get(2);
                double w = weight instanceof Number ? ((Number) weight).doubleValue() : Double.NaN;
                if (!(w >= 0) || Double.isInfinite(w)) {
                    throw new IllegalArgumentException("a seed's weight must be finite and non-negative, got " + weight);
                }
                if (w == 0) {
                    continue;
                }
                boolean passage = Boolean.TRUE.equals(seed.get(1));
                Node node = tx.findNode(passage ? PASSAGE : ENTITY, "id", String.valueOf(seed.get(0)));
                if (node == null) {
                    continue;
                }
                Vertex v = vertex(node.getId(), passage);
                restartAt.add(v);
                restart.add(w);
                total += w;
            }
            for (int i = 0; i < restart.size(); i++) {
                restart.set(i, restart.get(i) / total);
                restartAt.get(i).residual += restart.get(i);
            }
        }

        /** Wave by wave, as hippo.graph.ppr.push_pagerank: every vertex over its threshold is pushed at once,
         * so the answer depends on the edges the reader may walk, never on the order the store keeps
         * them in (which hidden writes move): a sequential queue's would, by float rounding and by
         * which vertex crosses its threshold first. */
        boolean run(double damping, double epsilon, long maxPushes, TerminationGuard guard) {
            List<Vertex> frontier = new ArrayList<>();
            for (Vertex v : restartAt) {
                if (!v.queued && due(v, epsilon)) {
                    v.queued = true;
                    frontier.add(v);
                }
            }
            while (!frontier.isEmpty()) {
                if (pushes + frontier.size() > maxPushes) {
                    return false;
                }
                guard.check();
                double[] mass = new double[frontier.size()];
                for (int i = 0; i < mass.length; i++) {
                    Vertex v = frontier.get(i);
                    v.queued = false;
                    mass[i] = v.residual;
                    v.residual = 0;
                    v.estimate += (1 - damping) * mass[i];
                }
                List<Vertex> candidates = new ArrayList<>();
                double stuck = 0;
                for (int i = 0; i < mass.length; i++) {
                    Vertex v = frontier.get(i);
                    Edges e = read(v);
                    pushes++;
                    edges += e.targets().length;
                    if (e.strength() <= 0) {  // nothing walkable: that mass restarts, as the exact solvers do
                        stuck += mass[i];
                        continue;
                    }
                    double share = damping * mass[i] / e.strength();
                    for (int j = 0; j < e.targets().length; j++) {
                        Vertex t = vertex(e.targets()[j], e.toPassage()[j]);
                        t.residual += share * e.weights()[j];
                        if (!t.queued) {
                            t.queued = true;
                            candidates.add(t);
                        }
                    }
                }
                if (stuck > 0) {
                    for (int i = 0; i < restartAt.size(); i++) {
                        Vertex t = restartAt.get(i);
                        t.residual += damping * stuck * restart.get(i);
                        if (!t.queued) {
                            t.queued = true;
                            candidates.add(t);
                        }
                    }
                }
                frontier = new ArrayList<>();
                for (Vertex t : candidates) {
                    t.queued = false;
                    if (due(t, epsilon)) {
                        t.queued = true;
                        frontier.add(t);
                    }
                }
            }
            return true;
        }

        /** The residual of ``v`` reaches epsilon times its walkable strength (at least 1). */
        private boolean due(Vertex v, double epsilon) {
            if (v.residual < epsilon) {
                return false;
            }
            if (v.edges == null) {
                v.edges = known.edges.get(v.id);
            }
            if (v.edges == null) {
                double bound = bound(v);
                if (!Double.isNaN(bound) && v.residual >= epsilon * Math.max(bound, 1.0)) {
                    return true;
                }
                if (everything && !Double.isNaN(bound)) {
                    return false;
                }
            }
            return v.residual >= epsilon * Math.max(read(v).strength(), 1.0);
        }

        private Vertex vertex(long id, boolean passage) {
            Vertex v = vertices.get(id);
            if (v == null) {
                v = new Vertex(id, passage);
                vertices.put(id, v);
            }
            return v;
        }

        /** Strength over every edge, from the degree counters, as read_keyed_nodes.cypher gives it. */
        private double bound(Vertex v) {
            Double found = known.bounds.get(v.id);
            if (found == null) {
                Node node = tx.getNodeById(v.id);
                Object mentions = node.getProperty("mention_count", null);
                if (v.passage) {
                    found = mentions instanceof Number ? mentionWeight * ((Number) mentions).doubleValue() : Double.NaN;
                } else {
                    Object facts = node.getProperty("fact_count", null);
                    Object synonyms = node.getProperty("synonym_weight", null);
                    found = mentions instanceof Number && facts instanceof Number && synonyms instanceof Number
                            ? mentionWeight * ((Number) mentions).doubleValue()
                              + relationWeight * ((Number) facts).doubleValue() + ((Number) synonyms).doubleValue()
                            : Double.NaN;
                }
                known.bounds.put(v.id, found);
            }
            return found;
        }

        private boolean visiblePassage(Node p) {
            return p.getProperty("forgotten_at", null) == null
                    && (spaces == null || spaces.contains(String.valueOf(p.getProperty("space", null))));
        }

        /** Some passage the reader sees mentions this entity (for a reader of everything: any). */
        private boolean seen(Node node) {
            long id = node.getId();
            Boolean found = known.seen.get(id);
            if (found == null) {
                found = false;
                if (everything) {
                    Object mentions = node.getProperty("mention_count", null);
                    found = mentions instanceof Number && ((Number) mentions).longValue() > 0;
                } else {
                    try (ResourceIterable<Relationship> all = node.getRelationships(Direction.INCOMING, MENTIONS)) {
                        for (Relationship r : all) {
                            if (visiblePassage(r.getStartNode())) {
                                found = true;
                                break;
                            }
                        }
                    }
                }
                known.seen.put(id, found);
            }
            return found;
        }

        /** The walkable edges of ``v``, as read_neighbours.cypher reads them (once a revision). */
        private Edges read(Vertex v) {
            if (v.edges == null) {
                v.edges = known.edges.get(v.id);
            }
            if (v.edges == null) {
                v.edges = readEdges(v);
                known.keep(v.id, v.edges);
            }
            return v.edges;
        }

        private Edges readEdges(Vertex v) {
            Node node = tx.getNodeById(v.id);
            LongList targets = new LongList();
            List<Boolean> toPassage = new ArrayList<>();
            List<Double> weights = new ArrayList<>();
            if (v.passage) {
                if (visiblePassage(node)) {
                    try (ResourceIterable<Relationship> found = node.getRelationships(Direction.OUTGOING, MENTIONS)) {
                        for (Relationship r : found) {
                            targets.add(r.getEndNode().getId());
                            toPassage.add(false);
                            weights.add(mentionWeight);
                        }
                    }
                }
            } else if (node.hasLabel(ENTITY)) {
                try (ResourceIterable<Relationship> found = node.getRelationships(Direction.INCOMING, MENTIONS)) {
                    for (Relationship r : found) {
                        Node p = r.getStartNode();
                        if (everything || visiblePassage(p)) {
                            targets.add(p.getId());
                            toPassage.add(true);
                            weights.add(mentionWeight);
                        }
                    }
                }
                try (ResourceIterable<Relationship> found = node.getRelationships(Direction.BOTH, RELATES)) {
                    for (Relationship r : found) {
                        long other = r.getOtherNode(node).getId();
                        if (other != v.id && (everything || walkableFact(r))) {
                            targets.add(other);
                            toPassage.add(false);
                            weights.add(relationWeight);
                        }
                    }
                }
                if (seen(node)) {
                    try (ResourceIterable<Relationship> found = node.getRelationships(Direction.BOTH, SYNONYM)) {
                        for (Relationship r : found) {
                            Node o = r.getOtherNode(node);
                            Object score = r.getProperty("score", null);
                            if (o.hasLabel(ENTITY) && score instanceof Number && seen(o)) {
                                targets.add(o.getId());
                                toPassage.add(false);
                                weights.add(((Number) score).doubleValue());
                            }
                        }
                    }
                }
            }
            boolean[] kinds = new boolean[weights.size()];
            double[] w = new double[weights.size()];
            double strength = 0;
            for (int i = 0; i < w.length; i++) {
                w[i] = weights.get(i);
                kinds[i] = toPassage.get(i);
                strength += w[i];
            }
            return new Edges(targets.toArray(), kinds, w, strength);
        }

        private boolean walkableFact(Relationship r) {
            Object space = r.getProperty("space", null);
            return r.getProperty("forgotten_at", null) == null && space != null
                    && (spaces == null || spaces.contains(String.valueOf(space)));
        }

        Walk answer(boolean complete) {
            Walk walk = new Walk();
            walk.nodes = new ArrayList<>();
            walk.ids = new ArrayList<>();
            walk.passages = new ArrayList<>();
            walk.scores = new ArrayList<>();
            for (Vertex v : vertices.values()) {
                if (v.estimate > 0) {
                    walk.nodes.add(v.id);
                    walk.ids.add(String.valueOf(tx.getNodeById(v.id).getProperty("id", null)));
                    walk.passages.add(v.passage);
                    walk.scores.add(v.estimate);
                }
            }
            walk.pushes = pushes;
            walk.edges = edges;
            walk.complete = complete;
            walk.version = VERSION;
            return walk;
        }
    }

    /** A growable list of longs. */
    private static final class LongList {
        private long[] values = new long[16];
        private int size;

        void add(long value) {
            if (size == values.length) {
                values = java.util.Arrays.copyOf(values, size * 2);
            }
            values[size++] = value;
        }

        long[] toArray() {
            return java.util.Arrays.copyOf(values, size);
        }
    }
}
