package hippo.neo4j;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.ResourceIterable;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.TerminationGuard;

/**
 * One walk: the local push from a weighted reset over the edges one reader may walk, read as
 * hippo/cypher/read_neighbours.cypher reads them (through ``Known``, once a revision), in waves as
 * hippo.graph.ppr.push_pagerank pushes. Vertices are numbered as met; their state lives in arrays.
 */
@SuppressWarnings("removal")  // getId and getNodeById: the node ids read_neighbours.cypher says why hippo uses
final class Walker {
    static final Label PASSAGE = Label.label("Passage");
    static final Label ENTITY = Label.label("Entity");
    private static final RelationshipType MENTIONS = RelationshipType.withName("MENTIONS");
    private static final RelationshipType RELATES = RelationshipType.withName("RELATES");
    private static final RelationshipType SYNONYM = RelationshipType.withName("SYNONYM");

    private final Transaction tx;
    private final Known known;
    private final Set<String> spaces;  // null: every space
    private final boolean everything;  // every space and nothing forgotten (the degree counters say it all)
    private final double mentionWeight;
    private final double relationWeight;

    private final LongIntMap index = new LongIntMap();
    private long[] node = new long[1024];
    private boolean[] passage = new boolean[1024];
    private double[] residual = new double[1024];
    private double[] estimate = new double[1024];
    private double[] bound = new double[1024];  // strength over every edge from the counters; NaN: none
    private byte[] state = new byte[1024];  // LOOKED: Known asked for its edges and bound; QUEUED: in a frontier
    private Known.Edges[] edges = new Known.Edges[1024];
    private int[][] local = new int[1024][];  // its edges' targets as this walk's vertex numbers
    private int size;
    private int[] restartAt = new int[0];
    private double[] restart = new double[0];
    private long pushes;
    private long edgesRead;

    private static final byte LOOKED = 1;
    private static final byte QUEUED = 2;

    Walker(Transaction tx, Known known, Set<String> spaces, boolean everything, double mentionWeight,
           double relationWeight) {
        this.tx = tx;
        this.known = known;
        this.spaces = spaces;
        this.everything = everything;
        this.mentionWeight = mentionWeight;
        this.relationWeight = relationWeight;
    }

    long pushes() {
        return pushes;
    }

    long edges() {
        return edgesRead;
    }

    /** Seeds as [record id, is a passage, weight]; weights are normalized to sum to 1. */
    void reset(List<List<Object>> seeds) {
        int[] at = new int[seeds.size()];
        double[] weights = new double[seeds.size()];
        int n = 0;
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
            boolean isPassage = Boolean.TRUE.equals(seed.get(1));
            Node found = w == 0 ? null : tx.findNode(isPassage ? PASSAGE : ENTITY, "id", String.valueOf(seed.get(0)));
            if (found != null) {
                at[n] = vertex(found.getId(), isPassage);
                weights[n++] = w;
                total += w;
            }
        }
        restartAt = Arrays.copyOf(at, n);
        restart = Arrays.copyOf(weights, n);
        for (int i = 0; i < n; i++) {
            restart[i] /= total;
            residual[restartAt[i]] += restart[i];
        }
    }

    /**
     * Wave by wave, as hippo.graph.ppr.push_pagerank: every vertex over its threshold is pushed at once,
     * so the answer depends on the edges the reader may walk, never on the order the store keeps them in
     * (which hidden writes move): a sequential queue's would, by float rounding and by which vertex
     * crosses its threshold first. False when it stopped at ``maxPushes``.
     */
    boolean run(double damping, double epsilon, long maxPushes, TerminationGuard guard) {
        int[] frontier = new int[Math.max(16, restartAt.length)];
        int width = 0;
        for (int v : restartAt) {
            if ((state[v] & QUEUED) == 0 && due(v, epsilon)) {
                state[v] |= QUEUED;
                frontier[width++] = v;
            }
        }
        int[] candidates = new int[1024];
        double[] mass = new double[16];
        while (width > 0) {
            if (pushes + width > maxPushes) {
                return false;
            }
            guard.check();
            if (mass.length < width) {
                mass = new double[Math.max(width, 2 * mass.length)];
            }
            for (int i = 0; i < width; i++) {
                int v = frontier[i];
                state[v] &= ~QUEUED;
                mass[i] = residual[v];
                residual[v] = 0;
                estimate[v] += (1 - damping) * mass[i];
            }
            int found = 0;
            double stuck = 0;
            for (int i = 0; i < width; i++) {
                int v = frontier[i];
                Known.Edges e = read(v);
                int[] targets = targets(v, e);
                pushes++;
                edgesRead += targets.length;
                if (e.strength() <= 0) {  // nothing walkable: that mass restarts, as the exact solvers do
                    stuck += mass[i];
                    continue;
                }
                double share = damping * mass[i] / e.strength();
                double[] weights = e.weights();
                for (int j = 0; j < targets.length; j++) {
                    int t = targets[j];
                    residual[t] += share * weights[j];
                    if ((state[t] & QUEUED) == 0) {
                        state[t] |= QUEUED;
                        candidates = LongIntMap.grown(candidates, found);
                        candidates[found++] = t;
                    }
                }
            }
            for (int i = 0; stuck > 0 && i < restartAt.length; i++) {
                int t = restartAt[i];
                residual[t] += damping * stuck * restart[i];
                if ((state[t] & QUEUED) == 0) {
                    state[t] |= QUEUED;
                    candidates = LongIntMap.grown(candidates, found);
                    candidates[found++] = t;
                }
            }
            width = 0;
            for (int i = 0; i < found; i++) {
                int t = candidates[i];
                state[t] &= ~QUEUED;
                if (due(t, epsilon)) {
                    state[t] |= QUEUED;
                    frontier = LongIntMap.grown(frontier, width);
                    frontier[width++] = t;
                }
            }
        }
        return true;
    }

    /** The residual of ``v`` reaches epsilon times its walkable strength (at least 1). */
    private boolean due(int v, double epsilon) {
        if (residual[v] < epsilon) {
            return false;
        }
        look(v);
        if (edges[v] == null) {
            double b = bound[v];
            if (!Double.isNaN(b) && residual[v] >= epsilon * Math.max(b, 1.0)) {
                return true;
            }
            if (everything && !Double.isNaN(b)) {
                return false;
            }
        }
        return residual[v] >= epsilon * Math.max(read(v).strength(), 1.0);
    }

    /** What ``Known`` holds of ``v`` (its edges, else its counters' bound, read now if not): once a walk. */
    private void look(int v) {
        if ((state[v] & LOOKED) != 0) {
            return;
        }
        state[v] |= LOOKED;
        long id = node[v];
        edges[v] = known.edges.get(id);
        if (edges[v] != null) {
            return;
        }
        Double b = known.bounds.get(id);
        if (b == null) {
            b = counted(tx.getNodeById(id), passage[v]);
            known.keep(known.bounds, id, b);
        }
        bound[v] = b;
    }

    /** Strength over every edge, from the degree counters, as read_keyed_nodes.cypher gives it. */
    private double counted(Node n, boolean isPassage) {
        Object mentions = n.getProperty("mention_count", null);
        if (isPassage) {
            return mentions instanceof Number ? mentionWeight * ((Number) mentions).doubleValue() : Double.NaN;
        }
        Object facts = n.getProperty("fact_count", null);
        Object synonyms = n.getProperty("synonym_weight", null);
        return mentions instanceof Number && facts instanceof Number && synonyms instanceof Number
                ? mentionWeight * ((Number) mentions).doubleValue() + relationWeight * ((Number) facts).doubleValue()
                  + ((Number) synonyms).doubleValue()
                : Double.NaN;
    }

    private int vertex(long id, boolean isPassage) {
        int v = index.get(id);
        if (v >= 0) {
            return v;
        }
        if (size == node.length) {
            int grow = 2 * size;
            node = Arrays.copyOf(node, grow);
            passage = Arrays.copyOf(passage, grow);
            residual = Arrays.copyOf(residual, grow);
            estimate = Arrays.copyOf(estimate, grow);
            bound = Arrays.copyOf(bound, grow);
            state = Arrays.copyOf(state, grow);
            edges = Arrays.copyOf(edges, grow);
            local = Arrays.copyOf(local, grow);
        }
        v = size++;
        node[v] = id;
        passage[v] = isPassage;
        bound[v] = Double.NaN;
        index.put(id, v);
        return v;
    }

    private int[] targets(int v, Known.Edges e) {
        if (local[v] == null) {
            long[] ids = e.targets();
            boolean[] toPassage = e.toPassage();
            int[] at = new int[ids.length];
            for (int j = 0; j < ids.length; j++) {
                at[j] = vertex(ids[j], toPassage[j]);
            }
            local[v] = at;
        }
        return local[v];
    }

    /** The walkable edges of ``v``, read from the store once a revision (``Known``). */
    private Known.Edges read(int v) {
        look(v);
        if (edges[v] == null) {
            edges[v] = readEdges(node[v], passage[v]);
            known.keep(node[v], edges[v]);
        }
        return edges[v];
    }

    private boolean visiblePassage(Node p) {
        return p.getProperty("forgotten_at", null) == null
                && (spaces == null || spaces.contains(String.valueOf(p.getProperty("space", null))));
    }

    private boolean walkableFact(Relationship r) {
        Object space = r.getProperty("space", null);
        return r.getProperty("forgotten_at", null) == null && space != null
                && (spaces == null || spaces.contains(String.valueOf(space)));
    }

    /** Some passage the reader sees mentions this entity (for a reader of everything: any). */
    private boolean seen(Node n) {
        long id = n.getId();
        Boolean found = known.seen.get(id);
        if (found == null) {
            found = false;
            if (everything) {
                Object mentions = n.getProperty("mention_count", null);
                found = mentions instanceof Number && ((Number) mentions).longValue() > 0;
            } else {
                try (ResourceIterable<Relationship> all = n.getRelationships(Direction.INCOMING, MENTIONS)) {
                    for (Relationship r : all) {
                        if (visiblePassage(r.getStartNode())) {
                            found = true;
                            break;
                        }
                    }
                }
            }
            known.keep(known.seen, id, found);
        }
        return found;
    }

    /** As read_neighbours.cypher reads them: a passage's mentions; an entity's visible mentioning passages,
     * the other ends of its visible facts (none to itself) and, when both ends are seen, its synonyms. */
    private Known.Edges readEdges(long id, boolean isPassage) {
        Node n = tx.getNodeById(id);
        Edge out = new Edge();
        if (isPassage) {
            if (visiblePassage(n)) {
                try (ResourceIterable<Relationship> found = n.getRelationships(Direction.OUTGOING, MENTIONS)) {
                    for (Relationship r : found) {
                        out.add(r.getEndNode().getId(), false, mentionWeight);
                    }
                }
            }
        } else if (n.hasLabel(ENTITY)) {
            try (ResourceIterable<Relationship> found = n.getRelationships(Direction.INCOMING, MENTIONS)) {
                for (Relationship r : found) {
                    Node p = r.getStartNode();
                    if (everything || visiblePassage(p)) {
                        out.add(p.getId(), true, mentionWeight);
                    }
                }
            }
            try (ResourceIterable<Relationship> found = n.getRelationships(Direction.BOTH, RELATES)) {
                for (Relationship r : found) {
                    long other = r.getOtherNode(n).getId();
                    if (other != id && (everything || walkableFact(r))) {
                        out.add(other, false, relationWeight);
                    }
                }
            }
            if (seen(n)) {
                try (ResourceIterable<Relationship> found = n.getRelationships(Direction.BOTH, SYNONYM)) {
                    for (Relationship r : found) {
                        Node o = r.getOtherNode(n);
                        Object score = r.getProperty("score", null);
                        if (o.hasLabel(ENTITY) && score instanceof Number && seen(o)) {
                            out.add(o.getId(), false, ((Number) score).doubleValue());
                        }
                    }
                }
            }
        }
        return out.edges();
    }

    /** The pushed vertices (those with an estimate): node ids, record ids, kinds, scores. */
    void answer(Push.Walk walk) {
        walk.nodes = new ArrayList<>();
        walk.ids = new ArrayList<>();
        walk.passages = new ArrayList<>();
        walk.scores = new ArrayList<>();
        for (int v = 0; v < size; v++) {
            if (estimate[v] > 0) {
                String id = known.ids.get(node[v]);
                if (id == null) {
                    id = String.valueOf(tx.getNodeById(node[v]).getProperty("id", null));
                    known.keep(known.ids, node[v], id);
                }
                walk.nodes.add(node[v]);
                walk.ids.add(id);
                walk.passages.add(passage[v]);
                walk.scores.add(estimate[v]);
            }
        }
        walk.pushes = pushes;
        walk.edges = edgesRead;
    }

    /** Edges as they are read, growing. */
    private static final class Edge {
        private long[] targets = new long[16];
        private boolean[] toPassage = new boolean[16];
        private double[] weights = new double[16];
        private int size;
        private double strength;

        void add(long target, boolean isPassage, double weight) {
            if (size == targets.length) {
                targets = Arrays.copyOf(targets, 2 * size);
                toPassage = Arrays.copyOf(toPassage, 2 * size);
                weights = Arrays.copyOf(weights, 2 * size);
            }
            targets[size] = target;
            toPassage[size] = isPassage;
            weights[size++] = weight;
            strength += weight;
        }

        Known.Edges edges() {
            return new Known.Edges(Arrays.copyOf(targets, size), Arrays.copyOf(toPassage, size),
                    Arrays.copyOf(weights, size), strength);
        }
    }
}
