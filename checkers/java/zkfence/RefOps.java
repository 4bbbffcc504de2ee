package zkfence;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;

/**
 * Reference histories read, parsed and paired where they are, on the executors: {@link #ops} maps a
 * row per file {@code (hist, path, fmt)} to a row per operation, streamed (checkers/ref_ops.py,
 * OPS): its invocation's line, process, f, key and value, and the completion paired with it (null
 * when none: an open op). Lines are numbered as the file has them; each file is one pass, in order,
 * because pairing is per process over the whole file (a process's invocation may wait any number of
 * lines for its completion, or forever).
 *
 * <p>Only the canonical line shapes are read: Porcupine's kv lines ({@code {:process 0, :type
 * :invoke, :f :get, :key "k", :value nil}}, one map a line, these fields in this order, no string
 * escape) and Porcupine's etcd logs ({@code INFO jepsen.util - 0 :invoke :read nil}: what the Python
 * parser's {@code body.split(None, 3)} gives, typ and f without their leading colons). A scanner, not
 * a regex: Java's and RE2's regexes with groups cost microseconds a line, ten times this. Pairing
 * follows checkers/parsers.py: a completion pairs with its process's pending invocation; an
 * invocation while one is pending, or a completion with none pending (in kv only {@code :ok};
 * {@code :fail}/{@code :info} then do nothing), is an error. Any line of another shape, any byte
 * outside printable ASCII and tab (Python's splitlines and split take some of them as breaks or
 * spaces), and any pairing error end the file with one row whose {@code err} is true: the driver
 * then parses that history with checkers/parsers.py, which reads it or names the wrong line. So this
 * never reads a history differently from the Python parsers; it only declines. Blank lines (and
 * kv's EDN comments) are skipped, as the parsers skip them.
 */
public final class RefOps {
    private RefOps() {}

    /** The op rows' schema (checkers/ref_ops.py, OPS). */
    public static final String SCHEMA = "hist int, line long, proc long, f string, key string, val string, "
            + "ret_line long, ret_typ string, ret_f string, ret_val string, err boolean";

    public static Dataset<Row> ops(Dataset<Row> files) {
        StructType schema = StructType.fromDDL(SCHEMA);
        return files.flatMap((FlatMapFunction<Row, Row>) f -> new FileOps(f.getInt(0), f.getString(1),
                "porcupine-etcd".equals(f.getString(2))), Encoders.row(schema));
    }

    /** One parsed line: {@code proc, typ, f, key, val}; {@link #BAD} for a line not read. */
    private record Line(long proc, String typ, String f, String key, String val) {}

    private static final Line BAD = new Line(0, null, null, null, null);

    /** The ops of one file, in the order they are decided (completed, closed, or open at its end). */
    static final class FileOps implements Iterator<Row> {
        private final int hist;
        private final boolean etcd;
        private final InputStream in;
        private final Map<Long, Object[]> pending = new HashMap<>();
        private final ArrayDeque<Row> ready = new ArrayDeque<>();
        private final Sink sink; // null: ops become rows
        private boolean failed = false;
        private byte[] buf = new byte[256];
        private final byte[] chunk = new byte[1 << 20];
        private int pos = 0;
        private int lim = 0;
        private long line = 0;
        private boolean done = false;

        FileOps(int hist, String path, boolean etcd) throws IOException {
            this(hist, path, etcd, null);
        }

        private FileOps(int hist, String path, boolean etcd, Sink sink) throws IOException {
            this.hist = hist;
            this.etcd = etcd;
            this.sink = sink;
            this.in = new FileInputStream(path);
        }

        @Override
        public boolean hasNext() {
            try {
                while (ready.isEmpty() && !done) {
                    step();
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return !ready.isEmpty();
        }

        @Override
        public Row next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return ready.poll();
        }

        /** Reads one line into buf (a plain buffer: InputStream.read() per byte takes a lock each). */
        private int readLine() throws IOException {
            int n = 0;
            while (true) {
                if (pos == lim) {
                    lim = in.read(chunk);
                    pos = 0;
                    if (lim <= 0) {
                        lim = 0;
                        return n > 0 ? n : -1; // a last line without its newline, or the end
                    }
                }
                int i = pos;
                while (i < lim && chunk[i] != '\n') {
                    i++;
                }
                int len = i - pos;
                if (n + len > buf.length) {
                    buf = Arrays.copyOf(buf, Math.max(buf.length * 2, n + len));
                }
                System.arraycopy(chunk, pos, buf, n, len);
                n += len;
                if (i < lim) {
                    pos = i + 1;
                    return n;
                }
                pos = lim;
            }
        }

        private void finish() throws IOException {
            done = true;
            in.close();
        }

        private void error() throws IOException {
            failed = true;
            ready.clear();
            ready.add(RowFactory.create(hist, line, null, null, null, null, null, null, null, null, true));
            finish();
        }

        private void op(Object[] inv, Long retLine, String typ, String f, String val) {
            if (sink != null) {
                sink.op((Long) inv[0], (Long) inv[1], (String) inv[2], (String) inv[3], (String) inv[4],
                        retLine == null ? -1 : retLine, typ, f, val);
                return;
            }
            ready.add(RowFactory.create(hist, inv[0], inv[1], inv[2], inv[3], inv[4], retLine, typ, f, val, false));
        }

        private void step() throws IOException {
            int n = readLine();
            if (n < 0) {
                for (Object[] inv : pending.values()) {
                    op(inv, null, null, null, null); // never completed: open
                }
                finish();
                return;
            }
            line++;
            Line l = etcd ? etcdLine(buf, 0, n) : kvLine(buf, 0, n);
            if (l == null) {
                return; // blank
            }
            if (l == BAD || (etcd && !("read".equals(l.f) || "write".equals(l.f) || "cas".equals(l.f)))) {
                error();
                return;
            }
            if ("invoke".equals(l.typ)) {
                if (pending.containsKey(l.proc)) {
                    error(); // invokes again before its op completed
                    return;
                }
                pending.put(l.proc, new Object[] {line, l.proc, l.f, l.key, l.val});
                return;
            }
            Object[] inv = pending.remove(l.proc);
            if (inv == null) {
                if (etcd || "ok".equals(l.typ)) {
                    error(); // a completion with nothing pending
                }
                return; // kv: a :fail or :info with nothing pending does nothing
            }
            op(inv, line, l.typ, l.f, l.val);
        }
    }

    /** Where {@link #scan} puts each op, as decided: retLine -1 (and typ, retF, retVal null) for an open op. */
    interface Sink {
        void op(long line, long proc, String f, String key, String val, long retLine, String typ, String retF,
                String retVal);
    }

    /**
     * The ops of one file handed to {@code sink} instead of made rows (a caller that keeps them all:
     * no Row, boxed field or array per op kept); false when the file is declined (an {@code err} row's
     * case), after which what the sink got must be dropped.
     */
    static boolean scan(String path, boolean etcd, Sink sink) throws IOException {
        FileOps ops = new FileOps(0, path, etcd, sink);
        while (!ops.done) {
            ops.step();
        }
        return !ops.failed;
    }

    /** End of the line's text: before a final '\r'; -1 when a byte is not printable ASCII or tab. */
    private static int plainEnd(byte[] b, int from, int to) {
        int end = to > from && b[to - 1] == '\r' ? to - 1 : to;
        for (int i = from; i < end; i++) {
            int c = b[i] & 0xff;
            if (c != '\t' && (c < 0x20 || c > 0x7e)) {
                return -1;
            }
        }
        return end;
    }


    private static String text(byte[] b, int from, int to) {
        return new String(b, from, to - from, StandardCharsets.US_ASCII);
    }

    /** The cursor after {@code lit} at {@code at}, or -1. */
    private static int lit(byte[] b, int at, int end, String lit) {
        int n = lit.length();
        if (at + n > end) {
            return -1;
        }
        for (int k = 0; k < n; k++) {
            if (b[at + k] != lit.charAt(k)) {
                return -1;
            }
        }
        return at + n;
    }

    /** The cursor after one of {@code words} at {@code at} (its index in {@code which[0]}), or -1. */
    private static int oneOf(byte[] b, int at, int end, String[] words, int[] which) {
        for (int w = 0; w < words.length; w++) {
            int c = lit(b, at, end, words[w]);
            if (c >= 0) {
                which[0] = w;
                return c;
            }
        }
        return -1;
    }

    /** The cursor after a '"'-quoted string without '\\' or '"' inside, or -1. */
    private static int quoted(byte[] b, int at, int end) {
        if (at >= end || b[at] != '"') {
            return -1;
        }
        for (int i = at + 1; i < end; i++) {
            if (b[i] == '"') {
                return i + 1;
            }
            if (b[i] == '\\') {
                return -1;
            }
        }
        return -1;
    }

    /** The cursor after an integer matching {@code -?[0-9]{1,18}} ({@code 0|[1-9][0-9]{0,17}} if not signed). */
    private static int integer(byte[] b, int at, int end, boolean signed) {
        int i = at;
        if (signed && i < end && b[i] == '-') {
            i++;
        }
        int d = i;
        while (i < end && b[i] >= '0' && b[i] <= '9') {
            i++;
        }
        int n = i - d;
        if (n < 1 || n > 18 || (!signed && n > 1 && b[d] == '0')) {
            return -1;
        }
        return i;
    }

    private static final String[] TYPES = {"invoke", "ok", "fail", "info"};
    private static final String[] KV_FS = {"get", "put", "append"};

    static Line kvLine(byte[] b, int from, int to) {
        int end = plainEnd(b, from, to);
        if (end < 0) {
            return BAD;
        }
        int i = from;
        while (i < end && (b[i] == ' ' || b[i] == '\t' || b[i] == ',')) {
            i++;
        }
        if (i == end || b[i] == ';') {
            return null; // blank, or an EDN comment
        }
        int[] w = new int[1];
        int p0 = lit(b, i, end, "{:process ");
        int p1 = p0 < 0 ? -1 : integer(b, p0, end, false);
        int t0 = p1 < 0 ? -1 : lit(b, p1, end, ", :type :");
        int t1 = t0 < 0 ? -1 : oneOf(b, t0, end, TYPES, w);
        String typ = t1 < 0 ? null : TYPES[w[0]];
        int f0 = t1 < 0 ? -1 : lit(b, t1, end, ", :f :");
        int f1 = f0 < 0 ? -1 : oneOf(b, f0, end, KV_FS, w);
        String fn = f1 < 0 ? null : KV_FS[w[0]];
        int k0 = f1 < 0 ? -1 : lit(b, f1, end, ", :key ");
        int k1 = k0 < 0 ? -1 : quoted(b, k0, end);
        int v0 = k1 < 0 ? -1 : lit(b, k1, end, ", :value ");
        int v1 = v0 < 0 ? -1 : lit(b, v0, end, "nil");
        boolean nil = v1 >= 0;
        if (v0 >= 0 && !nil) {
            v1 = quoted(b, v0, end);
        }
        int c = v1 < 0 ? -1 : lit(b, v1, end, "}");
        if (c < 0) {
            return BAD;
        }
        while (c < end && (b[c] == ' ' || b[c] == '\t' || b[c] == ',')) {
            c++;
        }
        if (c != end) {
            return BAD;
        }
        return new Line(Long.parseLong(text(b, p0, p1)), typ, fn, text(b, k0 + 1, k1 - 1),
                nil ? null : text(b, v0 + 1, v1 - 1));
    }

    private static boolean space(byte c) {
        return c == ' ' || c == '\t';
    }

    private static int skipSpace(byte[] b, int i, int end) {
        while (i < end && space(b[i])) {
            i++;
        }
        return i;
    }

    private static int token(byte[] b, int i, int end) {
        while (i < end && !space(b[i])) {
            i++;
        }
        return i;
    }

    private static String colonless(byte[] b, int from, int to) {
        while (from < to && b[from] == ':') {
            from++;
        }
        return text(b, from, to);
    }

    static Line etcdLine(byte[] b, int from, int to) {
        int end = plainEnd(b, from, to);
        if (end < 0) {
            return BAD;
        }
        int i = skipSpace(b, from, end);
        while (end > i && space(b[end - 1])) {
            end--;
        }
        if (i == end) {
            return null; // blank
        }
        // Python's "INFO\s+jepsen\.util\s+-\s+" before the body, when it is there
        int j = lit(b, i, end, "INFO");
        if (j >= 0 && j < end && space(b[j])) {
            j = lit(b, skipSpace(b, j, end), end, "jepsen.util");
            if (j >= 0 && j < end && space(b[j])) {
                j = lit(b, skipSpace(b, j, end), end, "-");
                if (j >= 0 && j < end && space(b[j])) {
                    i = skipSpace(b, j, end);
                }
            }
        }
        int p1 = integer(b, i, end, true);
        if (p1 < 0 || p1 == end || !space(b[p1])) {
            return BAD;
        }
        int t0 = skipSpace(b, p1, end);
        int t1 = token(b, t0, end);
        if (t1 == end) {
            return BAD;
        }
        int f0 = skipSpace(b, t1, end);
        int f1 = token(b, f0, end);
        String val = null;
        if (f1 < end) {
            val = text(b, skipSpace(b, f1, end), end);
        }
        return new Line(Long.parseLong(text(b, i, p1)), colonless(b, t0, t1), colonless(b, f0, f1), null, val);
    }

}
