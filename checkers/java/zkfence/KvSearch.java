package zkfence;

import java.util.Arrays;
import java.util.HashSet;
import java.util.SplittableRandom;

/**
 * One key's part of a Porcupine kv history searched for a linearization: the search of
 * checkers/wgl.py ({@code Search}), step for step, over the kv model of checkers/models.py
 * ({@code KeyValue}, partitioned: the state is the key's string, starting ""; a get is legal when
 * its outcome is unknown or it read the state; a put sets it; an append adds to it).
 *
 * <p>Entries (calls and returns) sit in a doubly linked list sorted by time, calls first at equal
 * times (ties by op index). At a call: try the model step; if legal and (linearized set, new state)
 * is new, lift the op out and restart from the head. At a return: that op can no longer be
 * linearized: backtrack. An open op's return is at the end: reaching one means every completed op
 * is linearized. {@link #run} is resumable, so a scheduler can interleave parts. Its step count,
 * deepest partial linearization and blocker are those of the Python search, which the tests hold
 * part by part (tests/integration/test_ref_search.py).
 *
 * <p>The cache holds (linearized bitset, state) pairs as Porcupine's does; a bitset's hash is kept
 * as it changes (a random word per op, XORed in and out), so a lookup costs no pass over the set.
 */
final class KvSearch {
    static final int GET = 0;
    static final int PUT = 1;
    static final int APPEND = 2;

    private final int[] fn;
    private final String[] arg;
    private final String[] out; // a completed get's result; null for an open op
    private final boolean[] open;
    private final int tail;
    private final int[] nxt;
    private final int[] prv;
    private final int[] opidx;
    private final int[] match; // call node -> its return node; 0 for returns
    private final boolean[] openRet;
    private final long[] lin;
    private final long[] zobrist;
    private long linHash = 0;
    private final HashSet<Key> cache = new HashSet<>();
    /** The heap the cache holds, estimated: an entry, its key and its bitset's copy. */
    long cacheBytes = 0;
    private final long entryBytes;
    private final int[] callNodes;
    private final String[] callStates;
    private int depth = 0;
    private int entry;
    private String state = "";
    long steps = 0;
    Boolean done;
    int bestDepth = -1;
    int blocker = -1; // the op whose return ended the deepest partial linearization

    /** Ops of one part in call order: call and return times (ret: ignored when open). */
    KvSearch(int[] fn, String[] arg, String[] out, long[] call, long[] ret, boolean[] open) {
        int n = fn.length;
        this.fn = fn;
        this.arg = arg;
        this.out = out;
        this.open = open;
        int size = 2 * n + 2;
        tail = size - 1;
        nxt = new int[size];
        prv = new int[size];
        for (int i = 0; i < size; i++) {
            nxt[i] = i + 1;
            prv[i] = i - 1;
        }
        opidx = new int[size];
        match = new int[size];
        openRet = new boolean[size];
        int[] order = order(call, ret, n);
        int[] callNode = new int[n];
        for (int k = 0; k < 2 * n; k++) {
            int node = k + 1;
            int e = order[k];
            int i = e < n ? e : e - n;
            opidx[node] = i;
            if (e < n) {
                callNode[i] = node;
            } else {
                match[callNode[i]] = node;
                openRet[node] = open[i];
            }
        }
        opidx[0] = -1;
        opidx[tail] = -1;
        lin = new long[(n + 63) >>> 6];
        entryBytes = 96 + 8L * lin.length;
        zobrist = new long[n];
        SplittableRandom rnd = new SplittableRandom(n);
        for (int i = 0; i < n; i++) {
            zobrist[i] = rnd.nextLong();
        }
        callNodes = new int[n];
        callStates = new String[n];
        entry = nxt[0];
        done = n == 0 ? Boolean.TRUE : null;
    }

    /**
     * Entries in list order, as Python sorts (time, kind, index): entry e < n is op e's call, e >= n
     * op (e - n)'s return, an open return last. Packed in longs and sorted as such when times and
     * indexes fit (every history this reads), else by a comparator.
     */
    static int[] order(long[] call, long[] ret, int n) {
        long maxTime = 0;
        for (int i = 0; i < n; i++) {
            maxTime = Math.max(maxTime, Math.max(call[i], ret[i] == Long.MAX_VALUE ? 0 : ret[i]));
        }
        int[] order = new int[2 * n];
        if (maxTime < (1L << 40) && n < (1 << 21)) {
            long openTime = (1L << 41) - 1;
            long[] keys = new long[2 * n];
            for (int i = 0; i < n; i++) {
                keys[i] = (call[i] << 22) | i;
                long t = ret[i] == Long.MAX_VALUE ? openTime : ret[i];
                keys[n + i] = (t << 22) | (1L << 21) | i;
            }
            Arrays.sort(keys);
            for (int k = 0; k < 2 * n; k++) {
                int i = (int) (keys[k] & ((1 << 21) - 1));
                order[k] = (keys[k] & (1L << 21)) != 0 ? n + i : i;
            }
            return order;
        }
        Integer[] boxed = new Integer[2 * n];
        for (int i = 0; i < 2 * n; i++) {
            boxed[i] = i;
        }
        Arrays.sort(boxed, (a, b) -> {
            int c = Double.compare(time(a, call, ret, n), time(b, call, ret, n));
            if (c != 0) {
                return c;
            }
            c = Integer.compare(a < n ? 0 : 1, b < n ? 0 : 1);
            return c != 0 ? c : Integer.compare(a % n, b % n);
        });
        for (int k = 0; k < 2 * n; k++) {
            order[k] = boxed[k];
        }
        return order;
    }

    private static double time(int e, long[] call, long[] ret, int n) {
        if (e < n) {
            return call[e];
        }
        return ret[e - n] == Long.MAX_VALUE ? Double.POSITIVE_INFINITY : ret[e - n];
    }

    /** The step of checkers/models.py's KeyValue for op i from {@code cur}: the new state, or null if illegal. */
    private String step(int i, String cur) {
        switch (fn[i]) {
            case GET:
                return open[i] || cur.equals(out[i]) ? cur : null;
            case PUT:
                return arg[i];
            default:
                return cur + arg[i];
        }
    }

    private static final class Key {
        final long[] bits;
        final String state;
        final int hash;

        Key(long[] bits, String state, long linHash) {
            this.bits = bits;
            this.state = state;
            this.hash = Long.hashCode(linHash * 31 + state.hashCode());
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            Key k = (Key) o;
            return hash == k.hash && state.equals(k.state) && Arrays.equals(bits, k.bits);
        }
    }

    /** Runs at most {@code maxIters} steps: null while unfinished, else the verdict. */
    Boolean run(int maxIters) {
        if (done != null) {
            return done;
        }
        int it = 0;
        Boolean result = null;
        while (it < maxIters) {
            it++;
            if (nxt[0] == tail) {
                result = Boolean.TRUE;
                break;
            }
            int m = match[entry];
            if (m != 0) { // a call
                int i = opidx[entry];
                String next = step(i, state);
                if (next != null) {
                    int w = i >>> 6;
                    long bit = 1L << i;
                    lin[w] |= bit;
                    long h = linHash ^ zobrist[i];
                    Key probe = new Key(lin, next, h);
                    if (!cache.contains(probe)) {
                        cache.add(new Key(lin.clone(), next, h));
                        cacheBytes += entryBytes;
                        callNodes[depth] = entry;
                        callStates[depth] = state;
                        depth++;
                        state = next;
                        linHash = h;
                        int p = prv[entry];
                        int q = nxt[entry];
                        nxt[p] = q;
                        prv[q] = p;
                        p = prv[m];
                        q = nxt[m];
                        nxt[p] = q;
                        prv[q] = p;
                        entry = nxt[0];
                        continue;
                    }
                    lin[w] &= ~bit;
                }
                entry = nxt[entry];
            } else { // a return
                if (openRet[entry]) {
                    result = Boolean.TRUE; // every completed op is linearized; leftover open ops had no effect
                    break;
                }
                if (depth > bestDepth) {
                    bestDepth = depth;
                    blocker = opidx[entry];
                }
                if (depth == 0) {
                    result = Boolean.FALSE;
                    break;
                }
                depth--;
                entry = callNodes[depth];
                state = callStates[depth];
                callStates[depth] = null;
                int i = opidx[entry];
                lin[i >>> 6] &= ~(1L << i);
                linHash ^= zobrist[i];
                int mm = match[entry];
                nxt[prv[mm]] = mm;
                prv[nxt[mm]] = mm;
                nxt[prv[entry]] = entry;
                prv[nxt[entry]] = entry;
                entry = nxt[entry];
            }
        }
        steps += it;
        if (result != null) {
            done = result;
            if (result) {
                cache.clear(); // free memory early
            }
        }
        return result;
    }
}
