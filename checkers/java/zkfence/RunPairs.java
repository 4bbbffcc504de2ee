package zkfence;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;

/**
 * Both pairings of {@code harness analyze}'s tables, one run at a time, in the task that holds the
 * run's events (harness/analysis/tables.py, run_pairs): the rows of {@code recovery_pairs} (kind
 * "heal": key the fault type, heal_id, ms) and of {@code op_pairs} (kind "op": key the op, outcome,
 * ms), step by step as those windows take them. The caller exchanges and sorts the pairing events
 * by run; here each run is read once, instead of being cached and sorted by two windows.
 *
 * <p>Doubles compare as Spark SQL compares them: -0.0 equals 0.0, NaN equals NaN and is above
 * every other value. tests/integration/test_analyze_command.py holds the rows to the windows'.
 */
public final class RunPairs {
    private RunPairs() {}

    public static final String OUT = "run_dir STRING, kind STRING, key STRING, outcome STRING, heal_id STRING, ms DOUBLE";
    /** The columns read, by name (tables.pairing_events'). */
    static final String[] COLS = {"run_dir", "src", "seq", "type", "f", "t_wall", "t_mono", "process", "stage",
        "phase", "instant", "reason", "noop", "ended"};
    private static final int RUN = 0;
    private static final int SRC = 1;
    private static final int SEQ = 2;
    private static final int TYPE = 3;
    private static final int F = 4;
    private static final int T_WALL = 5;
    private static final int T_MONO = 6;
    private static final int PROCESS = 7;
    private static final int STAGE = 8;
    private static final int PHASE = 9;
    private static final int INSTANT = 10;
    private static final int REASON = 11;
    private static final int NOOP = 12;
    private static final int ENDED = 13;

    private static final int HEAL = 0;
    private static final int REGISTRATION = 1;
    private static final int START = 2;

    /** The pairs ({@link #OUT}) of {@code ev}, partitioned and sorted by run_dir by the caller;
     * {@code completions} and {@code notClients} are history/ops.py's COMPLETIONS and NOT_CLIENTS. */
    public static Dataset<Row> walk(Dataset<Row> ev, List<String> completions, List<String> notClients) {
        StructType in = ev.schema();
        int[] at = new int[COLS.length];
        for (int i = 0; i < COLS.length; i++) {
            at[i] = in.fieldIndex(COLS[i]);
        }
        Set<String> done = new HashSet<>(completions);
        Set<String> others = new HashSet<>(notClients);
        return ev.mapPartitions((MapPartitionsFunction<Row, Row>) it -> new Runs(it, at, done, others),
                Encoders.row(StructType.fromDDL(OUT)));
    }

    /** One event's fields, read once. */
    private static final class Ev {
        final String src;
        final long seq;
        final String type;
        final String f;
        final double tWall;
        final Long tMono;
        final String process;
        final int kind;
        final String fault;

        Ev(Row r, int[] at) {
            src = r.getString(at[SRC]);
            seq = r.getLong(at[SEQ]);
            type = r.getString(at[TYPE]);
            f = r.getString(at[F]);
            tWall = r.getDouble(at[T_WALL]);
            tMono = r.isNullAt(at[T_MONO]) ? null : r.getLong(at[T_MONO]);
            process = r.getString(at[PROCESS]);
            kind = kind(r, at);
            String ended = r.getString(at[ENDED]);
            fault = "heal".equals(f) && ended != null ? ended : f;
        }

        private int kind(Row r, int[] at) {
            if ("nemesis".equals(src) && "info".equals(type) && "complete".equals(r.getString(at[STAGE]))) {
                boolean heal = "heal".equals(f)
                        ? !("setup".equals(r.getString(at[REASON])) || "teardown".equals(r.getString(at[REASON])))
                          && !Boolean.TRUE.equals(r.get(at[NOOP]))
                        : "stop".equals(r.getString(at[PHASE])) || Boolean.TRUE.equals(r.get(at[INSTANT]));
                if (heal) {
                    return HEAL;
                }
            }
            if (src != null && src.startsWith("agent:") && "register".equals(f) && "ok".equals(type)) {
                return REGISTRATION;
            }
            if ("harness".equals(src) && "run_start".equals(f)) {
                return START;
            }
            return -1;
        }
    }

    /** Spark SQL's order of doubles (SQLOrderingUtil.compareDoubles). */
    static int compareDoubles(double a, double b) {
        return a == b ? 0 : Double.compare(a, b);
    }

    private static final class Runs implements Iterator<Row> {
        private final Iterator<Row> in;
        private final int[] at;
        private final Set<String> completions;
        private final Set<String> notClients;
        private Row pending;
        private Iterator<Row> ready = Collections.emptyIterator();

        Runs(Iterator<Row> in, int[] at, Set<String> completions, Set<String> notClients) {
            this.in = in;
            this.at = at;
            this.completions = completions;
            this.notClients = notClients;
            this.pending = in.hasNext() ? in.next() : null;
        }

        @Override
        public boolean hasNext() {
            while (!ready.hasNext() && pending != null) {
                String run = pending.getString(at[RUN]);
                List<Ev> evs = new ArrayList<>();
                evs.add(new Ev(pending, at));
                pending = null;
                while (in.hasNext()) {
                    Row r = in.next();
                    if (!Objects.equals(run, r.getString(at[RUN]))) {
                        pending = r;
                        break;
                    }
                    evs.add(new Ev(r, at));
                }
                List<Row> out = new ArrayList<>();
                heals(run, evs, out);
                ops(run, evs, out);
                ready = out.iterator();
            }
            return ready.hasNext();
        }

        @Override
        public Row next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return ready.next();
        }

        /** recovery_pairs: heals from the run's first run_start on and registrations in (t_wall,
         * kind, seq) order; a heal's time is the next row's when that is a registration. */
        private static void heals(String run, List<Ev> evs, List<Row> out) {
            Double start = null;
            for (Ev e : evs) {
                if (e.kind == START && (start == null || compareDoubles(e.tWall, start) < 0)) {
                    start = e.tWall;
                }
            }
            List<Ev> kept = new ArrayList<>();
            for (Ev e : evs) {
                if (e.kind == REGISTRATION || e.kind == HEAL && (start == null || compareDoubles(e.tWall, start) >= 0)) {
                    kept.add(e);
                }
            }
            kept.sort((a, b) -> {
                int c = compareDoubles(a.tWall, b.tWall);
                return c != 0 ? c : a.kind != b.kind ? Integer.compare(a.kind, b.kind) : Long.compare(a.seq, b.seq);
            });
            for (int i = 0; i < kept.size(); i++) {
                Ev h = kept.get(i);
                if (h.kind != HEAL) {
                    continue;
                }
                Ev next = i + 1 < kept.size() ? kept.get(i + 1) : null;
                Double ms = next != null && next.kind == REGISTRATION ? (next.tWall - h.tWall) * 1000.0 : null;
                out.add(RowFactory.create(run, "heal", h.fault, null, "nemesis/" + h.seq, ms));
            }
        }

        /** op_pairs: per source and process in seq order, an invoke pairs with the event right
         * after it when that is a completion, and is open otherwise. */
        private void ops(String run, List<Ev> evs, List<Row> out) {
            Map<List<String>, List<Ev>> groups = new HashMap<>();
            for (Ev e : evs) {
                boolean client = e.src != null && !e.src.startsWith("agent:") && !notClients.contains(e.src)
                        && e.type != null && ("invoke".equals(e.type) || completions.contains(e.type));
                if (client) {
                    groups.computeIfAbsent(Arrays.asList(e.src, e.process), k -> new ArrayList<>()).add(e);
                }
            }
            for (List<Ev> g : groups.values()) {
                g.sort((a, b) -> Long.compare(a.seq, b.seq));
                for (int i = 0; i < g.size(); i++) {
                    Ev inv = g.get(i);
                    if (!"invoke".equals(inv.type)) {
                        continue;
                    }
                    Ev next = i + 1 < g.size() ? g.get(i + 1) : null;
                    if (next == null || !completions.contains(next.type)) {
                        out.add(RowFactory.create(run, "op", inv.f, "open", null, null));
                        continue;
                    }
                    double ms = inv.tMono != null && next.tMono != null
                            ? (double) (next.tMono - inv.tMono) / 1e6 : (next.tWall - inv.tWall) * 1000.0;
                    out.add(RowFactory.create(run, "op", inv.f, next.type, null, ms));
                }
            }
        }
    }
}
