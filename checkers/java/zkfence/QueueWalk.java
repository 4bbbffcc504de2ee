package zkfence;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;

/**
 * The queue checkers' walk in the JVM: checkers/queue_walk.py's {@code walk}, the same anomalies
 * character for character, over the rows checkers/queue_pass.py's {@code project} would make, made
 * here from each (history, topic, partition)'s events ({@link #walkEvents}): no Arrow hand-over and
 * no Python worker. tests/integration/test_queue_pass.py holds it equal to the plans and, row for
 * row, to the Python walk on every queue fixture and on the bench's injected anomalies.
 *
 * <p>As there: a null field prints {@code null}; cited ids are sorted and cut at {@link #MAX_CITED};
 * null join keys never match, so in a group whose topic or partition is null no final read, failed
 * send or read matches a send; a lost write's message stops after {@code broker epochs:} and the
 * driver appends the epochs. Strings are ordered by code point, as Python orders them.
 */
public final class QueueWalk {
    private QueueWalk() {}

    static final int MAX_CITED = 8;
    /** checkers/queue_pass.py's OUT. */
    public static final String OUT = "hist STRING, checker STRING, verdict STRING, message STRING, "
            + "event_ids ARRAY<STRING>, key STRING, brokers ARRAY<BIGINT>, sidx BIGINT, sid STRING, value STRING, "
            + "topic STRING, part BIGINT";

    /**
     * Every anomaly of the events in {@code ev} ({@link #EVENT_COLS}, by name: the queue kinds'
     * events with {@code vals} their {@code v_values} parsed and {@code allacks} decided, by Spark),
     * which the caller has partitioned and sorted by (hist, v_topic, v_partition): each run of one
     * group's events is made its walk rows here, as checkers/queue_pass.py's {@code project} makes
     * them, and walked. The exchange moves an event, not each record a read returned; rows are
     * deserialised once and only one group is held at a time (groupByKey deserialised every row
     * twice and sorted on a string key: 2.6-3 s more on the bench's million operations).
     */
    public static Dataset<Row> walkEvents(Dataset<Row> ev) {
        StructType in = ev.schema();
        int[] at = new int[EVENT_COLS.length];
        for (int i = 0; i < EVENT_COLS.length; i++) {
            at[i] = in.fieldIndex(EVENT_COLS[i]);
        }
        return ev.mapPartitions((MapPartitionsFunction<Row, Row>) it -> new Groups(it, at),
                Encoders.row(StructType.fromDDL(OUT)));
    }

    /** The anomalies of each run of rows of one (hist, topic, partition), one run at a time. */
    private static final class Groups implements Iterator<Row> {
        private final Iterator<Row> in;
        private final int[] at;
        private Row pending;
        private Iterator<Row> ready = List.<Row>of().iterator();

        Groups(Iterator<Row> in, int[] at) {
            this.in = in;
            this.at = at;
            this.pending = in.hasNext() ? in.next() : null;
        }

        private boolean same(Row a, Row b) {
            return java.util.Objects.equals(a.get(at[E_HIST]), b.get(at[E_HIST]))
                    && java.util.Objects.equals(a.get(at[E_TOPIC]), b.get(at[E_TOPIC]))
                    && java.util.Objects.equals(a.get(at[E_PART]), b.get(at[E_PART]));
        }

        @Override
        public boolean hasNext() {
            while (!ready.hasNext() && pending != null) {
                List<Row> group = new ArrayList<>();
                Row first = pending;
                group.add(first);
                pending = null;
                while (in.hasNext()) {
                    Row r = in.next();
                    if (!same(first, r)) {
                        pending = r;
                        break;
                    }
                    group.add(r);
                }
                ready = walkRows(expand(group.iterator(), at)).iterator();
            }
            return ready.hasNext();
        }

        @Override
        public Row next() {
            if (!hasNext()) {
                throw new java.util.NoSuchElementException();
            }
            return ready.next();
        }
    }

    static final String[] EVENT_COLS = {"hist", "f", "type", "id", "idx", "v_topic", "v_partition", "v_offset",
        "v_value", "allacks", "v_leader", "v_leader_epoch", "v_hw", "v_offsets", "vals", "v_consumer", "seq"};
    private static final int E_HIST = 0;
    private static final int E_F = 1;
    private static final int E_TYPE = 2;
    private static final int E_ID = 3;
    private static final int E_IDX = 4;
    private static final int E_TOPIC = 5;
    private static final int E_PART = 6;
    private static final int E_OFFSET = 7;
    private static final int E_VALUE = 8;
    private static final int E_ALLACKS = 9;
    private static final int E_LEADER = 10;
    private static final int E_LE = 11;
    private static final int E_HW = 12;
    private static final int E_OFFSETS = 13;
    private static final int E_VALS = 14;
    private static final int E_CONSUMER = 15;
    private static final int E_SEQ = 16;

    /** project's rows of each event: a send's or state's one, an ok read's records zipped, a final read's completion. */
    static List<R> expand(Iterator<Row> it, int[] at) {
        List<R> out = new ArrayList<>();
        while (it.hasNext()) {
            Row e = it.next();
            String f = e.getString(at[E_F]);
            String type = e.getString(at[E_TYPE]);
            if (f == null) {
                continue;
            }
            boolean isSend = f.equals("send") && ("ok".equals(type) || "fail".equals(type));
            boolean isState = f.equals("partition_state");
            boolean readOk = (f.equals("poll") || f.equals("final_read")) && "ok".equals(type);
            boolean isFinal = f.equals("final_read") && type != null && !type.equals("invoke");
            Object[] base = new Object[COLS.length];
            base[HIST] = e.get(at[E_HIST]);
            base[TOPIC] = e.get(at[E_TOPIC]);
            base[PART] = e.get(at[E_PART]);
            base[EID] = e.get(at[E_ID]);
            base[IDX] = e.get(at[E_IDX]);
            if (isSend || isState) {
                Object[] r = base.clone();
                r[TAG] = isSend ? ("ok".equals(type) ? "S" : "X") : "P";
                if (isSend) {
                    r[OFF] = e.get(at[E_OFFSET]);
                    r[VALUE] = e.get(at[E_VALUE]);
                    r[ALLACKS] = Boolean.TRUE.equals(e.get(at[E_ALLACKS]));
                }
                r[LEADER] = e.get(at[E_LEADER]);
                if (isState) {
                    r[LE] = e.get(at[E_LE]);
                }
                out.add(new R(r));
                continue;
            }
            if (!readOk && !isFinal) {
                continue;
            }
            int n = 0;
            List<?> offs = null;
            List<?> vals = null;
            if (readOk && !e.isNullAt(at[E_OFFSETS]) && !e.isNullAt(at[E_VALS])) {
                // arrays_zip: as long as the longer, the shorter padded with nulls
                offs = e.getList(at[E_OFFSETS]);
                vals = e.getList(at[E_VALS]);
                n = Math.max(offs.size(), vals.size());
            }
            for (int pos = 0; pos < n; pos++) {
                Object[] r = base.clone();
                r[TAG] = "R";
                r[OFF] = pos < offs.size() ? offs.get(pos) : null;
                r[VALUE] = pos < vals.size() ? vals.get(pos) : null;
                r[FTYPE] = f;
                r[CONSUMER] = e.get(at[E_CONSUMER]);
                r[SEQ] = e.get(at[E_SEQ]);
                r[POS] = (long) pos;
                out.add(new R(r));
            }
            if (isFinal) {
                Object[] r = base.clone();
                r[TAG] = "F";
                r[LEADER] = e.get(at[E_LEADER]);
                r[LE] = e.get(at[E_LE]);
                r[HW] = e.get(at[E_HW]);
                r[FTYPE] = type;
                out.add(new R(r));
            }
        }
        return out;
    }

    private static final String[] COLS = {"hist", "topic", "part", "tag", "eid", "idx", "off", "value", "allacks",
        "leader", "le", "hw", "ftype", "consumer", "seq", "pos"};
    private static final int HIST = 0;
    private static final int TOPIC = 1;
    private static final int PART = 2;
    private static final int TAG = 3;
    private static final int EID = 4;
    private static final int IDX = 5;
    private static final int OFF = 6;
    private static final int VALUE = 7;
    private static final int ALLACKS = 8;
    private static final int LEADER = 9;
    private static final int LE = 10;
    private static final int HW = 11;
    private static final int FTYPE = 12;
    private static final int CONSUMER = 13;
    private static final int SEQ = 14;
    private static final int POS = 15;

    /** One walk row's fields (queue_pass.ROW's, by the constants above). */
    private static final class R {
        final Object[] f;

        R(Object[] fields) {
            f = fields;
        }

        String s(int i) {
            return (String) f[i];
        }

        Long l(int i) {
            return (Long) f[i];
        }
    }

    /** Python's order of strings: by code point. */
    static final Comparator<String> CODEPOINTS = (a, b) -> {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int x = a.codePointAt(i);
            int y = b.codePointAt(j);
            if (x != y) {
                return Integer.compare(x, y);
            }
            i += Character.charCount(x);
            j += Character.charCount(y);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    };

    /** Spark's ascending order of numbers, nulls first. */
    private static final Comparator<Long> LONGS = Comparator.nullsFirst(Comparator.<Long>naturalOrder());

    static String text(Object x) {
        return x == null ? "null" : x.toString();
    }

    /** Python's {@code json.dumps(..., separators=(",", ":"), ensure_ascii=False)} of a string. */
    static String jsonString(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case '\b' -> b.append("\\b");
                case '\f' -> b.append("\\f");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    /** queue_walk.key: a JSON object of the non-null fields, in order, no spaces. */
    static String key(Object... kv) {
        StringBuilder b = new StringBuilder("{");
        boolean first = true;
        for (int i = 0; i < kv.length; i += 2) {
            Object v = kv[i + 1];
            if (v == null) {
                continue;
            }
            if (!first) {
                b.append(',');
            }
            first = false;
            b.append(jsonString((String) kv[i])).append(':');
            b.append(v instanceof String ? jsonString((String) v) : v.toString());
        }
        return b.append('}').toString();
    }

    private static List<String> ids(Object... xs) {
        List<String> out = new ArrayList<>();
        for (Object x : xs) {
            if (x != null) {
                out.add((String) x);
            }
        }
        return out;
    }

    private static List<String> cited(Set<String> eids) {
        List<String> out = new ArrayList<>(eids);
        out.sort(Comparator.nullsFirst(CODEPOINTS));
        return out.size() > MAX_CITED ? new ArrayList<>(out.subList(0, MAX_CITED)) : out;
    }

    /** A row's array: the row encoder takes a Scala sequence. */
    private static Object seq(List<?> xs) {
        return xs == null ? null : scala.jdk.javaapi.CollectionConverters.asScala(xs).toSeq();
    }

    private static final class Out {
        final List<Row> rows = new ArrayList<>();
        final String hist;
        final String topic;
        final Long part;

        Out(String hist, String topic, Long part) {
            this.hist = hist;
            this.topic = topic;
            this.part = part;
        }

        void add(String checker, String verdict, String message, List<String> eventIds, String key,
                 List<Long> brokers, Long sidx, String sid, String value) {
            rows.add(RowFactory.create(hist, checker, verdict, message, seq(eventIds), key, seq(brokers), sidx, sid,
                    value, topic, part));
        }
    }

    static List<Row> walkRows(List<R> rows) {
        List<R> s = new ArrayList<>();
        List<R> x = new ArrayList<>();
        List<R> recs = new ArrayList<>();
        List<R> fins = new ArrayList<>();
        List<R> states = new ArrayList<>();
        R any = null;
        for (R r : rows) {
            any = r;
            String tag = r.s(TAG);
            if (tag == null) {
                continue;
            }
            switch (tag) {
                case "S" -> s.add(r);
                case "X" -> x.add(r);
                case "R" -> recs.add(r);
                case "F" -> fins.add(r);
                case "P" -> states.add(r);
                default -> { }
            }
        }
        if (any == null) {
            return List.of();
        }
        String topic = any.s(TOPIC);
        Long part = any.l(PART);
        Out out = new Out(any.s(HIST), topic, part);
        boolean keyed = topic != null && part != null;
        String tp = text(topic) + "-" + text(part);
        offsetsAndValues(out, tp, topic, part, s, recs);
        pollOrder(out, tp, topic, part, recs);
        if (keyed) {
            aborted(out, tp, topic, part, x, recs);
        }
        lost(out, tp, topic, part, s, recs, keyed ? fins : List.of(), states);
        unseen(out, s, keyed ? recs : List.of());
        return out.rows;
    }

    private static void offsetsAndValues(Out out, String tp, String topic, Long part, List<R> sends, List<R> recs) {
        TreeMap<Long, TreeSet<String>> valuesAt = new TreeMap<>();
        TreeMap<String, TreeSet<Long>> offsetsOf = new TreeMap<>(CODEPOINTS);
        Map<Long, Set<String>> eidsAt = new HashMap<>();
        Map<String, Set<String>> eidsOf = new HashMap<>();
        for (List<R> rows : List.of(sends, recs)) {
            for (R r : rows) {
                Long off = r.l(OFF);
                String v = r.s(VALUE);
                if (off == null || v == null) {
                    continue;
                }
                valuesAt.computeIfAbsent(off, k -> new TreeSet<>(CODEPOINTS)).add(v);
                offsetsOf.computeIfAbsent(v, k -> new TreeSet<>()).add(off);
                eidsAt.computeIfAbsent(off, k -> new HashSet<>()).add(r.s(EID));
                eidsOf.computeIfAbsent(v, k -> new HashSet<>()).add(r.s(EID));
            }
        }
        for (Map.Entry<Long, TreeSet<String>> e : valuesAt.entrySet()) {
            if (e.getValue().size() > 1) {
                out.add("queue_inconsistent_offsets", "invalid",
                        tp + " offset " + e.getKey() + " holds different values: " + String.join(", ", e.getValue()),
                        cited(eidsAt.get(e.getKey())), key("topic", topic, "partition", part, "offset", e.getKey()),
                        null, null, null, null);
            }
        }
        for (Map.Entry<String, TreeSet<Long>> e : offsetsOf.entrySet()) {
            if (e.getValue().size() > 1) {
                List<String> offs = new ArrayList<>();
                for (Long o : e.getValue()) {
                    offs.add(o.toString());
                }
                out.add("queue_duplicate", "invalid",
                        tp + " value " + e.getKey() + " is at offsets " + String.join(", ", offs),
                        cited(eidsOf.get(e.getKey())), key("topic", topic, "partition", part), null, null, null, null);
            }
        }
    }

    private static void pollOrder(Out out, String tp, String topic, Long part, List<R> recs) {
        List<R> polls = new ArrayList<>();
        for (R r : recs) {
            if ("poll".equals(r.s(FTYPE)) && r.l(CONSUMER) != null) {
                polls.add(r);
            }
        }
        if (polls.size() < 2) {
            return;
        }
        polls.sort((a, b) -> {
            int c = LONGS.compare(a.l(CONSUMER), b.l(CONSUMER));
            if (c == 0) {
                c = LONGS.compare(a.l(SEQ), b.l(SEQ));
            }
            return c != 0 ? c : LONGS.compare(a.l(POS), b.l(POS));
        });
        for (int i = 1; i < polls.size(); i++) {
            R prev = polls.get(i - 1);
            R cur = polls.get(i);
            Long c = cur.l(CONSUMER);
            if (!c.equals(prev.l(CONSUMER)) || cur.l(OFF) == null || prev.l(OFF) == null) {
                continue;
            }
            long o = cur.l(OFF);
            long p = prev.l(OFF);
            String msg;
            if (o > p + 1) {
                msg = tp + ": consumer " + c + " skipped from offset " + p + " to " + o;
            } else if (o <= p) {
                msg = tp + ": consumer " + c + " read offset " + o + " after offset " + p + " (non-monotonic)";
            } else {
                continue;
            }
            out.add("queue_poll_order", "invalid", msg, ids(prev.s(EID), cur.s(EID)),
                    key("topic", topic, "partition", part, "consumer", c), null, null, null, null);
        }
    }

    private static void aborted(Out out, String tp, String topic, Long part, List<R> failed, List<R> recs) {
        Map<String, List<R>> readsOf = new HashMap<>();
        for (R r : recs) {
            if (r.s(VALUE) != null) {
                readsOf.computeIfAbsent(r.s(VALUE), k -> new ArrayList<>()).add(r);
            }
        }
        for (R f : failed) {
            if (f.s(VALUE) == null) {
                continue;
            }
            for (R r : readsOf.getOrDefault(f.s(VALUE), List.of())) {
                out.add("queue_aborted_read", "invalid",
                        tp + ": " + text(r.s(FTYPE)) + " " + text(r.s(EID)) + " read " + f.s(VALUE) + " at offset "
                                + text(r.l(OFF)) + ", but its send failed",
                        ids(f.s(EID), r.s(EID)), key("topic", topic, "partition", part), null, null, null, null);
            }
        }
    }

    /** queue_walk._final: the last ok final read by index, else the last attempt; the first if no index. */
    private static R finalRead(List<R> fins) {
        if (fins.isEmpty()) {
            return null;
        }
        List<R> pool = new ArrayList<>();
        for (R f : fins) {
            if ("ok".equals(f.s(FTYPE))) {
                pool.add(f);
            }
        }
        if (pool.isEmpty()) {
            pool = fins;
        }
        R best = null;
        for (R f : pool) {
            if (f.l(IDX) != null && (best == null || f.l(IDX) > best.l(IDX))) {
                best = f;
            }
        }
        return best != null ? best : pool.get(0);
    }

    private record Between(Long le, Long leader, String eid) {}

    private static final Comparator<Between> BETWEEN = Comparator
            .comparing(Between::le, LONGS)
            .thenComparing(Between::leader, LONGS)
            .thenComparing(Between::eid, Comparator.nullsFirst(CODEPOINTS));

    private static void lost(Out out, String tp, String topic, Long part, List<R> sends, List<R> recs, List<R> fins,
                             List<R> states) {
        // the plan groups by the send's fields: identical send rows are one
        Map<List<Object>, R> acked = new LinkedHashMap<>();
        for (R r : sends) {
            if (Boolean.TRUE.equals(r.f[ALLACKS])) {
                acked.putIfAbsent(Arrays.asList(r.f[EID], r.f[IDX], r.f[VALUE], r.f[OFF], r.f[LEADER]), r);
            }
        }
        if (acked.isEmpty()) {
            return;
        }
        R fin = finalRead(fins);
        if (fin == null || !"ok".equals(fin.s(FTYPE))) {
            String why = fin == null ? "none ran" : "final read " + text(fin.s(EID)) + " ended " + text(fin.s(FTYPE));
            for (R r : acked.values()) {
                out.add("queue_lost_write", "unknown",
                        tp + ": acknowledged send of " + text(r.s(VALUE)) + " at offset " + text(r.l(OFF))
                                + " cannot be checked: no successful final read of the partition (" + why + ")",
                        ids(r.s(EID), fin == null ? null : fin.s(EID)), key("topic", topic, "partition", part),
                        null, null, null, null);
            }
            return;
        }
        // every ok final read's records of the partition, as the plan joins them (a null offset is no offset)
        Set<List<Object>> pairs = new HashSet<>();
        Map<String, TreeSet<Long>> offsetsOf = new HashMap<>();
        for (R r : recs) {
            if ("final_read".equals(r.s(FTYPE)) && r.l(OFF) != null && r.s(VALUE) != null) {
                pairs.add(List.of(r.s(VALUE), r.l(OFF)));
                offsetsOf.computeIfAbsent(r.s(VALUE), k -> new TreeSet<>()).add(r.l(OFF));
            }
        }
        List<Between> ps = new ArrayList<>();
        List<Long> psIdx = new ArrayList<>();
        for (R p : states) {
            if (p.l(IDX) != null) {
                ps.add(new Between(p.l(LE), p.l(LEADER), p.s(EID)));
                psIdx.add(p.l(IDX));
            }
        }
        Long fidx = fin.l(IDX);
        for (R r : acked.values()) {
            String v = r.s(VALUE);
            Long off = r.l(OFF);
            boolean atOffset = v != null && off != null && pairs.contains(List.of(v, off));
            boolean held = v != null && offsetsOf.containsKey(v);
            // lost: not at its offset; a null offset is lost only when the value is nowhere
            if (atOffset || (off == null && held)) {
                continue;
            }
            TreeSet<Long> found = v == null ? null : offsetsOf.get(v);
            String where;
            if (found == null || found.isEmpty()) {
                where = "missing";
            } else {
                List<String> offs = new ArrayList<>();
                for (Long o : found) {
                    offs.add(o.toString());
                }
                where = "at offset(s) " + String.join(",", offs);
            }
            List<Between> between = new ArrayList<>();
            if (r.l(IDX) != null && fidx != null) {
                TreeSet<Between> b = new TreeSet<>(BETWEEN);
                for (int i = 0; i < ps.size(); i++) {
                    long idx = psIdx.get(i);
                    if (idx > r.l(IDX) && idx < fidx) {
                        b.add(ps.get(i));
                    }
                }
                for (Between e : b) {
                    if (between.size() == MAX_CITED) {
                        break;
                    }
                    between.add(e);
                }
            }
            List<String> shown = new ArrayList<>();
            for (Between e : between) {
                shown.add("leader " + text(e.leader()) + "@epoch " + text(e.le()));
            }
            List<String> eventIds = ids(r.s(EID), fin.s(EID));
            for (Between e : between) {
                if (e.eid() != null) {
                    eventIds.add(e.eid());
                }
            }
            List<Long> brokers = new ArrayList<>();
            for (Long b : new Long[] {r.l(LEADER), fin.l(LEADER)}) {
                if (b != null) {
                    brokers.add(b);
                }
            }
            out.add("queue_lost_write", "invalid",
                    tp + ": acknowledged (acks=all) send of " + text(v) + " at offset " + text(off) + " by leader "
                            + text(r.l(LEADER)) + " is " + where + " in the final read (hw " + text(fin.l(HW))
                            + ", leader " + text(fin.l(LEADER)) + " at leader epoch " + text(fin.l(LE))
                            + "); partition states between: " + (shown.isEmpty() ? "none recorded"
                            : String.join(", ", shown)) + "; broker epochs: ",
                    eventIds, key("topic", topic, "partition", part, "offset", off), brokers, null, null, null);
        }
    }

    private static void unseen(Out out, List<R> sends, List<R> recs) {
        Set<String> read = new HashSet<>();
        for (R r : recs) {
            if (r.s(VALUE) != null) {
                read.add(r.s(VALUE));
            }
        }
        for (R r : sends) {
            if (r.s(VALUE) == null || !read.contains(r.s(VALUE))) {
                out.add("queue_unseen", "unseen", null, null, null, null, r.l(IDX), r.s(EID), r.s(VALUE));
            }
        }
    }
}
