package zkfence;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * The fields {@code harness analyze} keeps of a history line, as text. The envelope's: what
 * {@code from_json(line, 'src string, seq string, ...')} gives (harness/analysis/dataset.py,
 * parse_lines), from one pass of Jackson over the line's characters. Spark's from_json decodes each
 * line through a java.io.Reader and builds a row per field list, which took most of an ingest.
 *
 * <p>It follows Spark's JacksonParser (sql/catalyst/.../json/JacksonParser.scala), step by step, so
 * that Jackson fails where it fails there:
 * <ul>
 *   <li>a string's text; any other value as the JSON Jackson's generator writes for it in UTF-8
 *       (1e0 is "1.0", a non-BMP character in an object is a surrogate-pair escape); null for JSON
 *       null; of a repeated key, the last;
 *   <li>Spark's default JSON options: single quotes and NaN/Infinity read, nothing else relaxed;
 *   <li>a field whose value fails to read keeps what it had, and the fields read before and after
 *       it stay (Spark's partial results); any other failure, or a line that is not a JSON object,
 *       gives no field at all.
 * </ul>
 * And of a line whose {@code src} is "nemesis", {@code value}'s OF_VALUE fields: what
 * {@code get_json_object(line, '$.value.<name>')} gives, following Spark's GetJsonObjectEvaluator
 * (its own JSON options; of a repeated key the first that is not null; null when the line fails
 * to parse anywhere in its object). Other lines get none: harness analyze reads them of the
 * nemesis's events only.
 *
 * <p>tests/integration/test_event_fields.py holds it to those expressions line by line.
 */
public final class EventFields implements UDF1<String, Row> {
    private static final long serialVersionUID = 1L;
    static final String[] FIELDS = {"src", "seq", "f", "type", "t_wall", "t_mono", "process"};
    static final String[] OF_VALUE = {"stage", "phase", "instant", "reason", "noop", "ended"};
    private static final JsonFactory FACTORY = JsonFactory.builder()
            .enable(JsonReadFeature.ALLOW_SINGLE_QUOTES)
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .build();
    // get_json_object's own: control characters in strings and single quotes read (for Hive), no NaN
    private static final JsonFactory PATHS = JsonFactory.builder()
            .enable(JsonReadFeature.ALLOW_UNESCAPED_CONTROL_CHARS)
            .enable(JsonReadFeature.ALLOW_SINGLE_QUOTES)
            .build();

    @Override
    public Row call(String line) {
        return RowFactory.create(line == null ? new Object[FIELDS.length + OF_VALUE.length] : parse(line));
    }

    /** The line's FIELDS then OF_VALUE texts (null where the line has none; all null where it fails
     * as a whole). */
    static Object[] parse(String line) {
        Object[] out = new Object[FIELDS.length + OF_VALUE.length];
        try (JsonParser p = FACTORY.createParser(line)) {
            if (p.nextToken() == JsonToken.START_OBJECT) {
                fields(p, out);
            }
        } catch (IOException | RuntimeException e) {
            return new Object[out.length];
        }
        if ("nemesis".equals(out[0])) {
            valueFields(line, out);
        }
        return out;
    }

    /** Every OF_VALUE field into {@code out}, in one pass over the line where it reads without an
     * exception: a field's first non-null occurrence in the first {@code value} object that has
     * one is what the path takes for it, whatever the other fields' are. Otherwise, field by
     * field (valueField), which gives each field what get_json_object gives on such a line. */
    private static void valueFields(String line, Object[] out) {
        String[] texts = new String[OF_VALUE.length];
        try (JsonParser p = PATHS.createParser(line)) {
            if (p.nextToken() == JsonToken.START_OBJECT) {
                inValues(p, texts);
            }
        } catch (IOException | RuntimeException e) {
            for (int i = 0; i < OF_VALUE.length; i++) {
                out[FIELDS.length + i] = valueField(line, OF_VALUE[i]);
            }
            return;
        }
        System.arraycopy(texts, 0, out, FIELDS.length, texts.length);
    }

    /** inObject(p, g, "value", name) for every OF_VALUE name at once. */
    private static void inValues(JsonParser p, String[] texts) throws IOException {
        while (p.nextToken() != JsonToken.END_OBJECT) {
            if (!"value".equals(p.currentName()) || p.currentToken() != JsonToken.FIELD_NAME) {
                p.skipChildren();
            } else if (p.nextToken() == JsonToken.START_OBJECT) {
                while (p.nextToken() != JsonToken.END_OBJECT) {
                    int i = p.currentToken() == JsonToken.FIELD_NAME ? indexOf(OF_VALUE, p.currentName()) : -1;
                    if (i < 0 || texts[i] != null) {
                        p.skipChildren();
                    } else if (p.nextToken() != JsonToken.VALUE_NULL) {
                        // one generator at a time: Jackson recycles one set of buffers per thread
                        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                        try (JsonGenerator g = PATHS.createGenerator(bytes, JsonEncoding.UTF8)) {
                            leaf(p, g);
                        }
                        texts[i] = bytes.toString(StandardCharsets.UTF_8);
                    }
                }
            } else {
                p.skipChildren();  // null, or not an object: nothing under it
            }
        }
    }

    private static void fields(JsonParser p, Object[] out) throws IOException {
        for (JsonToken t = p.nextToken(); t != null && t != JsonToken.END_OBJECT; t = p.nextToken()) {
            int i = indexOf(FIELDS, p.currentName());
            if (i < 0) {
                p.skipChildren();  // at the field's name: nothing; the loop's next token is its value, skipped
                continue;
            }
            try {
                // Spark's parseJsonToken: past a field's name to its value; at any other token with
                // the field's name (after a value that failed to read, the end of an array or object
                // in it), that token itself
                out[i] = text(p, t == JsonToken.FIELD_NAME ? p.nextToken() : t);
            } catch (IOException | RuntimeException e) {
                p.skipChildren();  // the field keeps what it had; a failure here ends the line
            }
        }
    }

    /** What get_json_object(line, '$.value.' + name) gives, step by step as Spark's evaluator takes it. */
    private static String valueField(String line, String name) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        boolean matched;
        try (JsonParser p = PATHS.createParser(line)) {
            try (JsonGenerator g = PATHS.createGenerator(bytes, JsonEncoding.UTF8)) {
                matched = p.nextToken() == JsonToken.START_OBJECT && inObject(p, g, "value", name);
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return matched ? bytes.toString(StandardCharsets.UTF_8) : null;
    }

    /** At an object: the first field named {@code key} whose value is not null and yields (its
     * {@code next} field, or itself when {@code next} is null); the rest of the object is read. */
    private static boolean inObject(JsonParser p, JsonGenerator g, String key, String next) throws IOException {
        boolean found = false;
        while (p.nextToken() != JsonToken.END_OBJECT) {
            if (found || !key.equals(p.currentName()) || p.currentToken() != JsonToken.FIELD_NAME) {
                p.skipChildren();  // at a field's name nothing: its value comes next round, and is skipped
            } else if (p.nextToken() != JsonToken.VALUE_NULL) {
                if (next == null) {
                    found = leaf(p, g);
                } else if (p.currentToken() == JsonToken.START_OBJECT) {
                    found = inObject(p, g, next, null);
                } else {
                    p.skipChildren();
                }
            }
        }
        return found;
    }

    private static boolean leaf(JsonParser p, JsonGenerator g) throws IOException {
        if (p.currentToken() == JsonToken.VALUE_STRING) {  // its text, unquoted
            if (p.hasTextCharacters()) {
                g.writeRaw(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
            } else {
                g.writeRaw(p.getText());
            }
        } else {
            g.copyCurrentStructure(p);
        }
        return true;
    }

    private static int indexOf(String[] names, String name) {
        for (int i = 0; i < names.length; i++) {
            if (names[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    private static String text(JsonParser p, JsonToken t) throws IOException {
        if (t == null) {
            return null;
        }
        switch (t) {
            case VALUE_NULL:
                return null;
            case VALUE_STRING:
            case VALUE_TRUE:
            case VALUE_FALSE:
                return p.getText();
            case VALUE_NUMBER_INT:  // as the generator writes it: -0 is "0"
                return p.getNumberType() == JsonParser.NumberType.BIG_INTEGER
                        ? p.getBigIntegerValue().toString() : Long.toString(p.getLongValue());
            case VALUE_NUMBER_FLOAT:
                if (p.getNumberType() == JsonParser.NumberType.DOUBLE) {
                    double d = p.getDoubleValue();
                    if (Double.isFinite(d)) {  // what the generator below writes for it, without one
                        return Double.toString(d);
                    }
                }
                // fall through
            default: {  // floats, objects and arrays: as Spark writes them back, in UTF-8
                ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                try (JsonGenerator g = FACTORY.createGenerator(bytes, JsonEncoding.UTF8)) {
                    g.copyCurrentStructure(p);
                }
                return bytes.toString(StandardCharsets.UTF_8);
            }
        }
    }
}
