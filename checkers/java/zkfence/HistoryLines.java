package zkfence;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;

/**
 * The history lines {@code harness analyze} ingests, read and parsed in the task that reads their
 * files (harness/analysis/dataset.py, history_lines): a task per slice of files, each file's lines
 * read as Spark's text source reads them and parsed by {@link EventFields}, one row per line with
 * its run's columns. It stands for {@code spark.read.text}, a join of each line's file name to its
 * run, the filter of blank lines and the function called per line, which took three times the
 * reading itself (bench/RESULTS.md); tests/integration/test_history_lines.py holds the two to the
 * same rows.
 *
 * <p>As Hadoop's LineRecordReader: a line ends at "\n", "\r" or "\r\n"; a UTF-8 byte order mark
 * at the start of a file is no part of its first line. As the filter {@code trim(line) != ''}: a
 * line of nothing but spaces is no line. {@code line} is the line's bytes (the text source keeps
 * them as they are, valid UTF-8 or not); the parse reads them decoded, as the function is given
 * them.
 */
public final class HistoryLines {
    private HistoryLines() {}

    public static final String SCHEMA = schema();

    private static String schema() {
        StringBuilder b = new StringBuilder("run_dir string, test string, date string, line binary");
        for (String name : EventFields.FIELDS) {
            b.append(", ").append(name).append(" string");
        }
        for (String name : EventFields.OF_VALUE) {
            b.append(", ").append(name).append(" string");
        }
        return b.toString();
    }

    private static final int RUN_COLUMNS = 4;  // run_dir, test, date, line

    /** The rows ({@link #SCHEMA}) of the files at {@code paths}, file i of run {@code runDirs[i]}
     * ({@code tests[i]}, {@code dates[i]}) read by the task {@code slices[i]}: each task is sent its
     * own files only. */
    public static Dataset<Row> read(SparkSession spark, List<String> paths, List<String> runDirs, List<String> tests,
                                    List<String> dates, List<Integer> slices) {
        int tasks = 0;
        for (int s : slices) {
            tasks = Math.max(tasks, s + 1);
        }
        List<List<String[]>> groups = new ArrayList<>();
        for (int s = 0; s < tasks; s++) {
            groups.add(new ArrayList<>());
        }
        for (int i = 0; i < slices.size(); i++) {
            groups.get(slices.get(i)).add(new String[] {paths.get(i), runDirs.get(i), tests.get(i), dates.get(i)});
        }
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        return spark.createDataFrame(jsc.parallelize(groups, Math.max(1, groups.size())).flatMap(Lines::new),
                StructType.fromDDL(SCHEMA));
    }

    /** The rows of a slice's files, one file open at a time. */
    private static final class Lines implements Iterator<Row> {
        private final Iterator<String[]> files;
        private InputStream in;
        private String[] file;  // path, run_dir, test, date
        private boolean first;
        private final byte[] chunk = new byte[1 << 16];
        private int pos;
        private int lim;
        private byte[] buf = new byte[1 << 12];
        private int len;
        private Row next;

        Lines(List<String[]> files) {
            this.files = files.iterator();
            TaskContext task = TaskContext.get();
            if (task != null) {
                task.addTaskCompletionListener((TaskCompletionListener) ctx -> close());
            }
        }

        @Override
        public boolean hasNext() {
            try {
                while (next == null) {
                    if (in == null) {
                        if (!files.hasNext()) {
                            return false;
                        }
                        file = files.next();
                        in = new FileInputStream(file[0]);
                        pos = lim = 0;
                        first = true;
                    }
                    if (!readLine()) {
                        close();
                    } else if (!blank()) {
                        next = row();
                    }
                }
                return true;
            } catch (IOException e) {
                close();
                throw new UncheckedIOException(file[0] + ": " + e.getMessage(), e);
            }
        }

        @Override
        public Row next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            Row r = next;
            next = null;
            return r;
        }

        /** The next line's bytes into buf[0, len); false at the end of the file. */
        private boolean readLine() throws IOException {
            len = 0;
            boolean any = false;
            while (true) {
                if (pos == lim && !fill()) {
                    break;
                }
                any = true;
                int from = pos;
                while (pos < lim && chunk[pos] != '\n' && chunk[pos] != '\r') {
                    pos++;
                }
                append(from, pos);
                if (pos < lim) {
                    byte end = chunk[pos++];
                    if (end == '\r' && (pos < lim || fill()) && chunk[pos] == '\n') {
                        pos++;
                    }
                    break;
                }
            }
            if (!any) {
                return false;
            }
            if (first) {
                first = false;
                if (len >= 3 && buf[0] == (byte) 0xEF && buf[1] == (byte) 0xBB && buf[2] == (byte) 0xBF) {
                    System.arraycopy(buf, 3, buf, 0, len - 3);
                    len -= 3;
                }
            }
            return true;
        }

        private boolean fill() throws IOException {
            int n = in.read(chunk, 0, chunk.length);
            pos = 0;
            lim = Math.max(n, 0);
            return n > 0;
        }

        private void append(int from, int to) {
            int n = to - from;
            if (len + n > buf.length) {
                buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
            }
            System.arraycopy(chunk, from, buf, len, n);
            len += n;
        }

        private boolean blank() {
            for (int i = 0; i < len; i++) {
                if (buf[i] != ' ') {
                    return false;
                }
            }
            return true;
        }

        private Row row() {
            Object[] fields = EventFields.parse(new String(buf, 0, len, StandardCharsets.UTF_8));
            Object[] out = new Object[RUN_COLUMNS + fields.length];
            out[0] = file[1];
            out[1] = file[2];
            out[2] = file[3];
            out[3] = Arrays.copyOf(buf, len);
            System.arraycopy(fields, 0, out, RUN_COLUMNS, fields.length);
            return RowFactory.create(out);
        }

        private void close() {
            if (in != null) {
                try {
                    in.close();
                } catch (IOException e) {
                    // read to its end or abandoned: nothing more comes of it
                }
                in = null;
            }
        }
    }
}
