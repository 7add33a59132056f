package hippo.neo4j;

import java.util.Arrays;

/** Node ids to a walk's own vertex numbers, without boxing (open addressing, linear probing). */
final class LongIntMap {
    private long[] keys = new long[1024];
    private int[] values = new int[1024];
    private boolean[] used = new boolean[1024];
    private int size;

    int get(long key) {
        int mask = keys.length - 1;
        for (int at = slot(key, mask); used[at]; at = (at + 1) & mask) {
            if (keys[at] == key) {
                return values[at];
            }
        }
        return -1;
    }

    void put(long key, int value) {
        if (2 * (size + 1) > keys.length) {
            grow();
        }
        int mask = keys.length - 1;
        int at = slot(key, mask);
        while (used[at] && keys[at] != key) {
            at = (at + 1) & mask;
        }
        if (!used[at]) {
            used[at] = true;
            keys[at] = key;
            size++;
        }
        values[at] = value;
    }

    private static int slot(long key, int mask) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }

    private void grow() {
        long[] oldKeys = keys;
        int[] oldValues = values;
        boolean[] oldUsed = used;
        keys = new long[oldKeys.length * 2];
        values = new int[oldKeys.length * 2];
        used = new boolean[oldKeys.length * 2];
        size = 0;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldUsed[i]) {
                put(oldKeys[i], oldValues[i]);
            }
        }
    }

    static int[] grown(int[] values, int size) {
        return size < values.length ? values : Arrays.copyOf(values, Math.max(16, values.length * 2));
    }
}
