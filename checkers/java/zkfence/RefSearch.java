package zkfence;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;

/**
 * Porcupine kv histories checked where they are read: {@link #checkPaths} runs a task per file
 * that parses and pairs it ({@link RefOps#scan}, so declined exactly as there), groups its ops by
 * key in memory (columns per key, no object per op kept) and searches every key's part with
 * {@link KvSearch} on the task's threads: no shuffle, no Arrow hand-over, no Python object per op,
 * no query plan (checkers/ref_jvm.py).
 *
 * <p>Scheduling is that of checkers/wgl.py's {@code run_parts}: parts are interleaved in slices of
 * {@code SLICE} steps (one queue: each thread takes the next part, runs a slice, puts it back), so a
 * hopeless part cannot starve an illegal one; a part over its CPU-seconds or steps budget is
 * unknown, never valid; the first illegal part stops the history's other parts (reported
 * {@code cancelled}). One more budget the Python search has no need of: this search fills a cache
 * twenty to fifty times faster, in the session's heap, so when the task's caches pass
 * {@code heapShare} of the heap the part that grew them is unknown (its {@code note} says so) and
 * its cache freed. A task Spark kills stops its threads at their next slice.
 *
 * <p>Rows ({@link #SCHEMA}): {@code kind} "part" (a verdict: true, false, unknown or cancelled, with
 * the blocker of a false one: its invocation's process, f, value, line and its completion's type,
 * f, value, line), "err" (the file is declined: a line RefOps does not read, or a put or append of
 * nil, which the Python model holds as no string; the driver's parser takes it) and "spent" (the
 * task's CPU: read, parse and group in {@code seconds}, the search in {@code steps} as nanoseconds).
 */
public final class RefSearch {
    private RefSearch() {}

    static final int SLICE = 4000;
    public static final String SCHEMA = "hist int, kind string, key string, valid string, ops long, steps long, "
            + "seconds double, depth long, proc long, f string, val string, line long, "
            + "ret_typ string, ret_f string, ret_val string, ret_line long, note string";

    /**
     * The rows ({@link #SCHEMA}) of the files at {@code paths} (hist = index), as JSON lines in one
     * string: a plain RDD job, a file per task, with no query plan to build and one Py4J round trip
     * for the rows.
     */
    public static String checkPaths(JavaSparkContext jsc, List<String> paths, double budgetSeconds, long budgetSteps,
                                    int threads, double heapShare, boolean stopOnIllegal) {
        List<Integer> hists = new ArrayList<>();
        for (int i = 0; i < paths.size(); i++) {
            hists.add(i);
        }
        List<String> files = new ArrayList<>(paths);
        List<String> lines = jsc.parallelize(hists, Math.max(1, hists.size())).flatMap(h -> {
            List<String> out = new ArrayList<>();
            for (Row r : checkFile(h, files.get(h), budgetSeconds, budgetSteps, threads, heapShare, stopOnIllegal)) {
                out.add(json(r));
            }
            return out.iterator();
        }).collect();
        return String.join("\n", lines);
    }

    private static final String[] FIELDS = StructType.fromDDL(SCHEMA).fieldNames();

    /** A row as a JSON object; its strings are printable ASCII and tab (RefOps reads nothing else). */
    private static String json(Row r) {
        StringBuilder b = new StringBuilder("{");
        for (int i = 0; i < FIELDS.length; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append('"').append(FIELDS[i]).append("\":");
            Object v = r.get(i);
            if (v instanceof String) {
                b.append('"');
                String t = (String) v;
                for (int k = 0; k < t.length(); k++) {
                    char c = t.charAt(k);
                    if (c == '"' || c == '\\') {
                        b.append('\\').append(c);
                    } else if (c < 0x20 || c > 0x7e) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
                b.append('"');
            } else if (v instanceof Double && !Double.isFinite((Double) v)) {
                b.append("null");
            } else {
                b.append(v == null ? "null" : v.toString());
            }
        }
        return b.append('}').toString();
    }

    private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();

    private static long cpuNanos() {
        return CPU.getCurrentThreadCpuTime();
    }

    /** One key's ops as decided (grown as the file is read), then in call (line) order; its search's progress. */
    private static final class Part {
        final String key;
        int n = 0;
        long[] line = new long[16];
        long[] proc = new long[16];
        long[] retLine = new long[16]; // Long.MAX_VALUE: open (:fail, :info, never completed)
        String[] f = new String[16];
        String[] val = new String[16];
        String[] typ = new String[16];
        String[] retF = new String[16];
        String[] retVal = new String[16]; // kept for a completed get only: nothing else reads it
        KvSearch search;
        long cpu = 0;
        long steps = 0;
        long held = 0; // cache bytes counted in the task's total
        long depth = -1;
        int blocker = -1;
        String valid = null;
        String note = null;

        Part(String key) {
            this.key = key;
        }

        void add(long ln, long pr, String fn, String v, long rl, String ty, String rf, String rv) {
            if (n == line.length) {
                int m = n * 2;
                line = Arrays.copyOf(line, m);
                proc = Arrays.copyOf(proc, m);
                retLine = Arrays.copyOf(retLine, m);
                f = Arrays.copyOf(f, m);
                val = Arrays.copyOf(val, m);
                typ = Arrays.copyOf(typ, m);
                retF = Arrays.copyOf(retF, m);
                retVal = Arrays.copyOf(retVal, m);
            }
            boolean done = "ok".equals(ty);
            line[n] = ln;
            proc[n] = pr;
            retLine[n] = done ? rl : Long.MAX_VALUE;
            f[n] = fn;
            val[n] = v;
            typ[n] = ty;
            retF[n] = rf;
            retVal[n] = done && "get".equals(rf) ? rv : null;
            n++;
        }

        /** Sorts the ops by invocation line: the part's op indexes are their ranks, as in the Python parts. */
        void sort() {
            long[] keys = new long[n];
            boolean packed = n < (1 << 21);
            for (int i = 0; i < n && packed; i++) {
                packed = line[i] < (1L << 42);
                keys[i] = (line[i] << 21) | i;
            }
            int[] idx = new int[n];
            if (packed) {
                Arrays.sort(keys);
                for (int i = 0; i < n; i++) {
                    idx[i] = (int) (keys[i] & ((1 << 21) - 1));
                }
            } else {
                Integer[] boxed = new Integer[n];
                for (int i = 0; i < n; i++) {
                    boxed[i] = i;
                }
                Arrays.sort(boxed, (a, b) -> Long.compare(line[a], line[b]));
                for (int i = 0; i < n; i++) {
                    idx[i] = boxed[i];
                }
            }
            line = permute(line, idx);
            proc = permute(proc, idx);
            retLine = permute(retLine, idx);
            f = permute(f, idx);
            val = permute(val, idx);
            typ = permute(typ, idx);
            retF = permute(retF, idx);
            retVal = permute(retVal, idx);
        }

        KvSearch search() {
            if (search == null) {
                int[] fn = new int[n];
                boolean[] open = new boolean[n];
                for (int i = 0; i < n; i++) {
                    fn[i] = "get".equals(f[i]) ? KvSearch.GET : "put".equals(f[i]) ? KvSearch.PUT : KvSearch.APPEND;
                    open[i] = retLine[i] == Long.MAX_VALUE;
                }
                search = new KvSearch(fn, val, retVal, line, retLine, open);
            }
            return search;
        }
    }

    private static long[] permute(long[] a, int[] idx) {
        long[] out = new long[idx.length];
        for (int i = 0; i < idx.length; i++) {
            out[i] = a[idx[i]];
        }
        return out;
    }

    private static String[] permute(String[] a, int[] idx) {
        String[] out = new String[idx.length];
        for (int i = 0; i < idx.length; i++) {
            out[i] = a[idx[i]];
        }
        return out;
    }

    static List<Row> checkFile(int hist, String path, double budgetSeconds, long budgetSteps, int threads,
                               double heapShare, boolean stopOnIllegal) throws Exception {
        long cpu0 = cpuNanos();
        Map<String, Part> byKey = new HashMap<>();
        boolean[] nilWrite = {false};
        boolean read = RefOps.scan(path, false, (ln, pr, fn, key, v, rl, ty, rf, rv) -> {
            if (v == null && !"get".equals(fn)) {
                nilWrite[0] = true;
            }
            byKey.computeIfAbsent(key, Part::new).add(ln, pr, fn, v, rl, ty, rf, rv);
        });
        // RefOps declines the file; a put or append of nil has no string for the model
        if (!read || nilWrite[0]) {
            List<Row> out = new ArrayList<>();
            out.add(RowFactory.create(hist, "err", null, null, null, null, null, null, null, null, null, null,
                    null, null, null, null, null));
            return out;
        }
        List<Part> parts = new ArrayList<>(byKey.values());
        for (Part p : parts) {
            p.sort();
        }
        parts.sort((a, b) -> a.key.compareTo(b.key)); // the Python parts' order: by key
        long prepared = cpuNanos() - cpu0;

        ConcurrentLinkedQueue<Part> queue = new ConcurrentLinkedQueue<>(parts);
        AtomicBoolean dead = new AtomicBoolean(false);
        AtomicBoolean killed = new AtomicBoolean(false);
        AtomicLong cacheBytes = new AtomicLong(0);
        long cacheLimit = (long) (Runtime.getRuntime().maxMemory() * heapShare);
        long[] searchCpu = new long[Math.max(1, threads)];
        int nThreads = Math.max(1, Math.min(threads, parts.size()));
        ExecutorService pool = Executors.newFixedThreadPool(nThreads, r -> {
            Thread t = new Thread(r, "zkfence-wgl-" + hist);
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<?>> running = new ArrayList<>();
            for (int w = 0; w < nThreads; w++) {
                int slot = w;
                running.add(pool.submit(() -> {
                    long t0 = cpuNanos();
                    // an empty queue: each part left is with a thread that puts it back after its slice
                    // and goes on with it, so this one has nothing to take over
                    for (Part p = queue.poll(); p != null && !killed.get(); p = queue.poll()) {
                        if (stopOnIllegal && dead.get()) {
                            p.valid = "cancelled";
                            continue;
                        }
                        long c0 = cpuNanos();
                        KvSearch s = p.search();
                        Boolean v = s.run(SLICE);
                        p.cpu += cpuNanos() - c0;
                        long total = cacheBytes.addAndGet(s.cacheBytes - p.held);
                        p.held = s.cacheBytes;
                        if (v == null) {
                            boolean overT = budgetSeconds > 0 && p.cpu >= budgetSeconds * 1e9;
                            boolean overS = budgetSteps > 0 && s.steps >= budgetSteps;
                            boolean overM = total > cacheLimit;
                            if (!(overT || overS || overM)) {
                                queue.add(p);
                                continue;
                            }
                            p.valid = "unknown";
                            if (overM && !(overT || overS)) {
                                p.note = String.format("memory budget exhausted after %d steps, %.1fs CPU: the task's "
                                        + "search caches held about %d MB", s.steps, p.cpu / 1e9, total >> 20);
                            }
                        } else {
                            p.valid = v.toString();
                            if (!v) {
                                dead.set(true);
                                p.blocker = s.blocker;
                                p.depth = s.bestDepth;
                            }
                        }
                        p.steps = s.steps;
                        p.search = null; // only the row's fields are kept: free the cache
                        cacheBytes.addAndGet(-p.held);
                        p.held = 0;
                    }
                    searchCpu[slot] = cpuNanos() - t0;
                }));
            }
            TaskContext ctx = TaskContext.get();
            for (Future<?> f : running) {
                while (true) {
                    try {
                        f.get(50, TimeUnit.MILLISECONDS);
                        break;
                    } catch (java.util.concurrent.TimeoutException e) {
                        if (ctx != null && ctx.isInterrupted()) {
                            killed.set(true); // Spark killed the task (job cancelled): stop the threads
                            throw new InterruptedException("the WGL task was killed");
                        }
                    }
                }
            }
        } finally {
            killed.set(true);
            pool.shutdownNow();
        }
        long spentSearch = 0;
        for (long c : searchCpu) {
            spentSearch += c;
        }
        List<Row> out = new ArrayList<>(parts.size() + 1);
        for (Part p : parts) {
            int b = p.blocker;
            boolean blocked = b >= 0;
            out.add(RowFactory.create(hist, "part", p.key, p.valid, (long) p.n, p.steps, p.cpu / 1e9,
                    blocked ? p.depth : null, blocked ? p.proc[b] : null, blocked ? p.f[b] : null,
                    blocked ? p.val[b] : null, blocked ? p.line[b] : null, blocked ? p.typ[b] : null,
                    blocked ? p.retF[b] : null, blocked ? p.retVal[b] : null,
                    blocked && p.retLine[b] != Long.MAX_VALUE ? p.retLine[b] : null, p.note));
        }
        out.add(RowFactory.create(hist, "spent", null, null, null, spentSearch, prepared / 1e9, null, null, null,
                null, null, null, null, null, null, null));
        return out;
    }
}
