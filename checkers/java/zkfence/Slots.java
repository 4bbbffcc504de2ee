package zkfence;

import java.io.Serializable;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A leaf whose rows are read when a query runs, not when it is built: the checkers' plans on
 * run-sized input are built once per process over a slot and run again for each history put in
 * it (checkers/plans.py, {@code reusable}). Building a plan (Python's DataFrame calls, Spark's
 * analysis of each step) took most of a small check; a built plan's physical form is kept by its
 * Dataset and runs again as it is.
 *
 * <p>{@code fill(slot, rows)} collects a Dataset's rows (one job) into the driver's memory, with
 * each row's string column {@code f} (the event kind); {@code spark.read.format("zkfence.Slots")
 * .schema(S).option("slot", slot).option("kinds", "a,b").load()} reads the rows of those kinds that
 * the slot holds when the query runs, in their order, as one partition (coalesce(1) after it tells
 * Spark so: no exchange before a window or aggregate), only the columns the query uses.
 * With a local master the executor is the driver's JVM, so the rows are where the reader is; a
 * cluster's executors could not see them, and checkers/plans.py never uses it there.
 */
public final class Slots implements TableProvider {
    private static final Map<String, Held> SLOTS = new ConcurrentHashMap<>();
    private static final Held EMPTY = new Held(new InternalRow[0], new String[0]);

    /** A slot's rows in their order, and each row's kind. */
    private record Held(InternalRow[] rows, String[] kinds) {
    }

    /** Put {@code rows}' rows in {@code slot} (replacing what it held); how many. */
    public static long fill(String slot, Dataset<Row> rows) {
        int kind = rows.schema().fieldIndex("f");
        InternalRow[] all = rows.queryExecution().executedPlan().executeCollect();  // each row its own copy
        String[] kinds = new String[all.length];
        for (int i = 0; i < all.length; i++) {
            kinds[i] = all[i].isNullAt(kind) ? "" : all[i].getUTF8String(kind).toString().intern();
        }
        SLOTS.put(slot, new Held(all, kinds));
        return all.length;
    }

    public static void clear(String slot) {
        SLOTS.remove(slot);
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        throw new IllegalArgumentException("zkfence.Slots reads with the schema it is given (.schema(...))");
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        CaseInsensitiveStringMap opts = new CaseInsensitiveStringMap(properties);
        String slot = opts.get("slot");
        if (slot == null) {
            throw new IllegalArgumentException("zkfence.Slots needs option slot");
        }
        String kinds = opts.getOrDefault("kinds", "");
        return new SlotTable(schema, slot, kinds.isEmpty() ? new String[0] : kinds.split(","));
    }

    static final class SlotTable implements Table, SupportsRead {
        private final StructType schema;
        private final String slot;
        private final String[] kinds;

        SlotTable(StructType schema, String slot, String[] kinds) {
            this.schema = schema;
            this.slot = slot;
            this.kinds = kinds;
        }

        @Override
        public String name() {
            return "slot " + slot + " " + String.join(",", kinds);
        }

        @Override
        public StructType schema() {
            return schema;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_READ);
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            return new SlotScan(schema, slot, kinds);
        }
    }

    static final class SlotScan implements ScanBuilder, SupportsPushDownRequiredColumns, Scan, Batch,
            SupportsReportStatistics {
        private final StructType full;
        private final String slot;
        private final String[] kinds;
        private StructType required;

        SlotScan(StructType full, String slot, String[] kinds) {
            this.full = full;
            this.slot = slot;
            this.kinds = kinds;
            this.required = full;
        }

        @Override
        public void pruneColumns(StructType requiredSchema) {
            required = requiredSchema;
        }

        @Override
        public Scan build() {
            return this;
        }

        @Override
        public StructType readSchema() {
            return required;
        }

        @Override
        public Batch toBatch() {
            return this;
        }

        /**
         * Small, whatever the slot will hold: with no estimate a leaf counts as unbounded, and a join
         * of two is then above spark.sql.maxSinglePartitionBytes, so Spark shuffles both sides into
         * one partition again. A shuffle's output is kept by the plan that ran it and read again by its
         * next run: the next history would be checked against the first one's rows. No join here is
         * broadcast (checkers/plans.py turns that off for run-sized input).
         */
        @Override
        public Statistics estimateStatistics() {
            return new Statistics() {
                @Override
                public OptionalLong sizeInBytes() {
                    return OptionalLong.of(1);
                }

                @Override
                public OptionalLong numRows() {
                    return OptionalLong.empty();
                }
            };
        }

        @Override
        public InputPartition[] planInputPartitions() {
            int[] ordinals = new int[required.fields().length];
            DataType[] types = new DataType[ordinals.length];
            for (int i = 0; i < ordinals.length; i++) {
                StructField field = required.fields()[i];
                ordinals[i] = full.fieldIndex(field.name());
                types[i] = field.dataType();
            }
            return new InputPartition[] {new SlotPartition(slot, kinds, ordinals, types)};
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            return partition -> new SlotReader((SlotPartition) partition);
        }
    }

    static final class SlotPartition implements InputPartition, Serializable {
        private static final long serialVersionUID = 1L;
        final String slot;
        final String[] kinds;
        final int[] ordinals;
        final DataType[] types;

        SlotPartition(String slot, String[] kinds, int[] ordinals, DataType[] types) {
            this.slot = slot;
            this.kinds = kinds;
            this.ordinals = ordinals;
            this.types = types;
        }
    }

    /** The slot's rows of the partition's kinds as they are now, in the order they were put. */
    static final class SlotReader implements PartitionReader<InternalRow> {
        private final SlotPartition p;
        private final Held held;
        private final Set<String> wanted;
        private int at = -1;
        private InternalRow current;

        SlotReader(SlotPartition p) {
            this.p = p;
            this.held = SLOTS.getOrDefault(p.slot, EMPTY);
            this.wanted = new HashSet<>(Arrays.asList(p.kinds));
        }

        @Override
        public boolean next() {
            do {
                at++;
            } while (at < held.rows().length && !wanted.contains(held.kinds()[at]));
            if (at >= held.rows().length) {
                return false;
            }
            InternalRow r = held.rows()[at];
            Object[] values = new Object[p.ordinals.length];
            for (int i = 0; i < values.length; i++) {
                values[i] = r.isNullAt(p.ordinals[i]) ? null : r.get(p.ordinals[i], p.types[i]);
            }
            current = new GenericInternalRow(values);
            return true;
        }

        @Override
        public InternalRow get() {
            return current;
        }

        @Override
        public void close() {
        }
    }
}
