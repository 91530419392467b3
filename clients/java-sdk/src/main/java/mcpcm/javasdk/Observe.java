package mcpcm.javasdk;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;
import tools.jackson.databind.util.RawValue;

/**
 * The adapter contract (docs/adapters.md), the Java twin of clients/_support/observe.mjs and the
 * run skeleton of its createRun: the cell file and its options, the Error record, the
 * observation with "pending" steps, the budget watchdog, the atomic write. Nothing here knows the
 * SDK; {@link Adapter} drives it.
 */
final class Observe {
    static final int CONTRACT = 1;
    /** How many causes an Error's chain holds at most. */
    static final int MAX_CHAIN = 10;
    /** How many out-of-band errors an observation keeps. */
    static final int MAX_TRANSPORT_ERRORS = 1000;
    /** The keys a cell file must have (both support runtimes check the same ones). */
    static final List<String> CELL_KEYS =
            List.of("cell_id", "options", "server", "calls", "followup", "call_timeout_ms", "budget_ms");

    /** Jackson 3, the JSON library the SDK itself brings (mcp-json-jackson3). */
    static final JsonMapper JSON = JsonMapper.shared();

    private Observe() {}

    // ---------------------------------------------------------------- the cell file (exit 2 on any problem)

    /** A bad command line, cell file or option: one line on stderr, exit status 2. */
    static final class BadCell extends RuntimeException {
        BadCell(String message) {
            super(message);
        }
    }

    static String jsonText(JsonNode value) {
        return value == null || value.isMissingNode() ? "null" : JSON.writeValueAsString(value);
    }

    /** observe.mjs readCell: the parsed cell, or BadCell with the shared messages. */
    static ObjectNode readCell(String file) {
        JsonNode cell;
        try {
            cell = JSON.readTree(Files.readAllBytes(Path.of(file)));
        } catch (IOException | RuntimeException e) {
            throw new BadCell("cannot read cell file " + file + ": " + e.getMessage());
        }
        if (cell == null || !cell.isObject()) throw new BadCell(file + ": the cell is not a JSON object");
        JsonNode contract = cell.get("contract");
        if (contract == null || !contract.isIntegralNumber() || contract.asInt() != CONTRACT) {
            throw new BadCell(file + ": contract " + jsonText(contract) + " is not supported (expected " + CONTRACT + ")");
        }
        List<String> missing = CELL_KEYS.stream().filter(key -> !cell.has(key)).toList();
        if (!missing.isEmpty()) throw new BadCell(file + ": missing key(s): " + String.join(", ", missing));
        return (ObjectNode) cell;
    }

    /** A JSON number with an integral value (JavaScript's Number.isInteger: 3.0 counts). */
    static boolean isInteger(JsonNode node) {
        if (node == null || !node.isNumber()) return false;
        if (node.isIntegralNumber()) return true;
        double d = node.doubleValue();
        return Double.isFinite(d) && d == Math.rint(d);
    }

    /** observe.mjs checkOptions: every unknown option or mistyped value, joined by "; ". */
    static void checkOptions(JsonNode options, Map<String, String> known) {
        if (options == null || !options.isObject()) throw new BadCell("options: expected an object, got " + jsonText(options));
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, JsonNode> entry : options.properties()) {
            String key = entry.getKey();
            String want = known.get(key);
            String quoted = JSON.writeValueAsString(key);
            if (want == null) {
                String names = known.isEmpty() ? "none" : String.join(", ", new TreeSet<>(known.keySet()));
                problems.add("unknown option " + quoted + " (this adapter understands: " + names + ")");
                continue;
            }
            JsonNode value = entry.getValue();
            boolean ok = switch (want) {
                case "boolean" -> value.isBoolean();
                case "integer" -> isInteger(value);
                case "number" -> value.isNumber();
                default -> value.isString();
            };
            if (!ok) problems.add("option " + quoted + ": expected " + want + ", got " + jsonText(value));
        }
        if (!problems.isEmpty()) throw new BadCell(String.join("; ", problems));
    }

    /** observe.mjs checkCancelAfter: a call's cancel_after_ms is absent, null or a non-negative integer. */
    static void checkCancelAfter(JsonNode calls) {
        for (JsonNode call : calls) {
            JsonNode after = call.get("cancel_after_ms");
            if (after != null && !after.isNull() && !(isInteger(after) && after.doubleValue() >= 0)) {
                throw new BadCell("cancel_after_ms: expected a non-negative integer, got " + jsonText(after));
            }
        }
    }

    // ---------------------------------------------------------------- Error records

    static ObjectNode error(String type, Integer code, String message) {
        ObjectNode record = JSON.createObjectNode();
        record.put("type", type);
        if (code == null) record.putNull("code");
        else record.put("code", code.intValue());
        record.put("message", message == null ? "" : message);
        return record;
    }

    /** The class name a Java developer reads in a stack trace, without the package. */
    static String typeName(Throwable t) {
        String simple = t.getClass().getSimpleName();
        return simple.isEmpty() ? t.getClass().getName() : simple;
    }

    /** The SDK-specific part of an Error: its JSON-RPC code and data ({@link Adapter#describe}). */
    interface Describer {
        void describe(Throwable t, ObjectNode record);
    }

    static Describer describer = (t, record) -> {};

    static ObjectNode flatRecord(Throwable t) {
        ObjectNode record = error(typeName(t), null, t.getMessage());
        describer.describe(t, record);
        return record;
    }

    /**
     * Anything thrown -> the contract's Error: {type, code, message}, plus data (a JSON-RPC error's
     * data) and chain: getCause() links, innermost last, each once, at most {@link #MAX_CHAIN}.
     * Suppressed exceptions are not causes (Reactor's block() adds a "#block terminated with an
     * error" marker there) and are left out.
     */
    static ObjectNode errorRecord(Throwable t) {
        ObjectNode record = flatRecord(t);
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        seen.add(t);
        ArrayNode chain = causes(t.getCause(), seen);
        if (!chain.isEmpty()) record.set("chain", chain);
        return record;
    }

    private static ArrayNode causes(Throwable first, Set<Throwable> seen) {
        ArrayNode chain = JSON.createArrayNode();
        for (Throwable c = first; c != null && chain.size() < MAX_CHAIN && seen.add(c); c = c.getCause()) {
            chain.add(flatRecord(c));
        }
        return chain;
    }

    /** observe.mjs deadlineError: the AdapterTimeout of a step ended (elapsedMs) or never started (null). */
    static ObjectNode deadlineError(String what, Double elapsedMs, String reason) {
        String message = elapsedMs == null
                ? "adapter deadline: " + what + " not started, the adapter's deadline had passed"
                : "adapter deadline: " + what + " ended by the adapter after " + number(elapsedMs) + " ms";
        if (reason != null) message += " (" + reason + ")";
        return error("AdapterTimeout", null, message);
    }

    /** A duration as JavaScript prints it: 41.2, 1200 (no ".0"). */
    static String number(double ms) {
        return ms == Math.rint(ms) ? Long.toString((long) ms) : Double.toString(ms);
    }

    // ---------------------------------------------------------------- the run

    /** One step of the observation: entered pending (raised, AdapterTimeout when written so), then settled. */
    static final class Step {
        final String kind; // "initialize", "list_tools", "call", "close"
        final String tool; // calls and the follow-up only
        final long t0 = System.nanoTime();
        boolean pending = true;
        String status = "raised";
        ObjectNode error;
        Object result; // a RawValue (the SDK's own JSON of the result) or a JsonNode
        String protocolVersion;
        List<String> tools;
        boolean cancellable; // the call had cancel_after_ms: cancelled_after_ms is recorded
        Double cancelledAfterMs;
        double durationMs;

        Step(String kind, String tool) {
            this.kind = kind;
            this.tool = tool;
        }

        /** Milliseconds since the step began, 0.1 ms resolution. */
        double elapsed() {
            return Math.round((System.nanoTime() - t0) / 100_000.0) / 10.0;
        }

        ObjectNode toJson() {
            ObjectNode node = JSON.createObjectNode();
            if (tool != null) node.put("tool", tool);
            node.put("status", status);
            if (tool != null) {
                if (result instanceof RawValue raw) node.putRawValue("result", raw);
                else node.set("result", (JsonNode) result);
            }
            node.set("error", error);
            if (kind.equals("initialize")) node.put("protocol_version", protocolVersion);
            if (kind.equals("list_tools")) {
                if (tools == null) node.putNull("tools");
                else tools.forEach(node.putArray("tools")::add);
            }
            node.put("duration_ms", durationMs);
            if (cancellable) {
                if (cancelledAfterMs == null) node.putNull("cancelled_after_ms");
                else node.put("cancelled_after_ms", cancelledAfterMs);
            }
            return node;
        }
    }

    /**
     * The observation of one cell, schema-complete at every moment (observe.mjs createRun): a step
     * is pending until settled; whatever ends the run (the budget watchdog, a signal, the normal
     * end) writes the facts gathered so far, with a pending step as AdapterTimeout and, after a
     * successful initialize, the calls and follow-up never started as AdapterTimeout "not started".
     * Every mutation holds the run's monitor, so the watchdog writes a consistent picture.
     */
    static final class Run {
        final String name;
        final Path obsPath;
        final JsonNode cell;
        final String packageVersion;
        final long deadlineEpochMs;
        final String deadlineReason;
        Runnable onAbort = () -> {};

        Step initialize;
        Step listTools;
        final List<Step> calls = new ArrayList<>();
        Step followup;
        Step close;
        final List<ObjectNode> transportErrors = new ArrayList<>();
        private int droppedErrors;
        private final Set<Throwable> seenErrors = Collections.newSetFromMap(new IdentityHashMap<>());
        private boolean written;

        /**
         * The watchdog fires at budget_ms minus a margin (5 % of the budget, 0.5..2 s, as
         * observe.mjs), counted from the JVM process's start, since the harness's budget runs
         * from there.
         */
        Run(String name, Path obsPath, JsonNode cell, String packageVersion) {
            this.name = name;
            this.obsPath = obsPath;
            this.cell = cell;
            this.packageVersion = packageVersion;
            long budgetMs = cell.get("budget_ms").asLong();
            double margin = Math.min(2000, Math.max(500, budgetMs * 0.05));
            long deadline = Math.round(budgetMs - margin);
            long started = ProcessHandle.current().info().startInstant()
                    .map(Instant::toEpochMilli).orElse(System.currentTimeMillis());
            this.deadlineEpochMs = started + deadline;
            this.deadlineReason = "budget watchdog at " + deadline + " ms of " + budgetMs + " ms";
        }

        /** Start the watchdog and the JVM-shutdown guard (SIGTERM, SIGINT). */
        void guard() {
            Thread watchdog = new Thread(() -> {
                try {
                    Thread.sleep(Math.max(0, deadlineEpochMs - System.currentTimeMillis()));
                } catch (InterruptedException e) {
                    return;
                }
                abort(deadlineReason, 0);
            }, "adapter-watchdog");
            watchdog.setDaemon(true);
            watchdog.start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                synchronized (this) {
                    if (written) return;
                }
                runOnAbort();
                write("JVM shutting down (SIGTERM, SIGINT or exit)");
            }, "adapter-shutdown"));
        }

        long msLeft() {
            return deadlineEpochMs - System.currentTimeMillis();
        }

        synchronized Step begin(String kind, String tool) {
            return new Step(kind, tool);
        }

        /** Settle a pending step: `patch` fills status, result/error and the like. */
        synchronized void settle(Step step, java.util.function.Consumer<Step> patch) {
            if (!step.pending) return;
            patch.accept(step);
            step.pending = false;
            step.durationMs = step.elapsed();
        }

        /** An out-of-band error (each Throwable once; beyond 1,000 only counted). */
        synchronized void reportError(Throwable t) {
            if (!seenErrors.add(t)) return;
            reportRecord(errorRecord(t));
        }

        synchronized void reportRecord(ObjectNode record) {
            if (transportErrors.size() >= MAX_TRANSPORT_ERRORS) {
                droppedErrors++;
                return;
            }
            transportErrors.add(record);
        }

        private void runOnAbort() {
            try {
                onAbort.run();
            } catch (RuntimeException e) {
                // best effort
            }
        }

        /** Write the observation (once) and end the process with `status`. */
        void finish(String reason, int status) {
            write(reason);
            System.out.flush();
            System.err.flush();
            Runtime.getRuntime().halt(status);
        }

        /** End early (watchdog, internal error): kill the server child first, as observe.mjs abort. */
        void abort(String reason, int status) {
            runOnAbort();
            finish(reason, status);
        }

        synchronized void write(String reason) {
            if (written) return;
            written = true;
            try {
                writeObservation(obsPath, snapshot(reason));
            } catch (IOException | RuntimeException e) {
                System.err.println(name + " adapter: cannot write the observation: " + e);
            }
        }

        private ObjectNode pendingAsTimeout(Step step, String reason) {
            if (step.pending) {
                step.durationMs = step.elapsed();
                String what = step.tool == null ? step.kind : step.kind + " " + step.tool;
                step.error = deadlineError(what, step.durationMs, reason);
                step.status = "raised";
                if (step.tool != null) step.result = JSON.nullNode();
            }
            return step.toJson();
        }

        private ObjectNode notStarted(String kind, String tool) {
            ObjectNode node = JSON.createObjectNode();
            node.put("tool", tool);
            node.put("status", "raised");
            node.putNull("result");
            node.set("error", deadlineError(kind + " " + tool, null, null));
            node.put("duration_ms", 0);
            return node;
        }

        /** The observation as observe.mjs writes it (finalizePending + completeSteps). */
        private ObjectNode snapshot(String reason) {
            ObjectNode obs = JSON.createObjectNode();
            obs.put("contract", CONTRACT);
            obs.put("package_version", packageVersion);
            obs.put("runtime_version", System.getProperty("java.version"));
            ObjectNode init;
            if (initialize == null) {
                init = JSON.createObjectNode();
                init.put("status", "raised");
                init.set("error", deadlineError("initialize", null, null));
                init.putNull("protocol_version");
                init.put("duration_ms", 0);
            } else {
                init = pendingAsTimeout(initialize, reason);
            }
            obs.set("initialize", init);
            obs.set("list_tools", listTools == null ? null : pendingAsTimeout(listTools, reason));
            ArrayNode callNodes = obs.putArray("calls");
            JsonNode followupNode = null;
            if ("ok".equals(init.get("status").asString())) {
                for (Step call : calls) callNodes.add(pendingAsTimeout(call, reason));
                JsonNode cellCalls = cell.get("calls");
                for (int i = calls.size(); i < cellCalls.size(); i++) {
                    callNodes.add(notStarted("call", cellCalls.get(i).get("name").asString()));
                }
                followupNode = followup != null
                        ? pendingAsTimeout(followup, reason)
                        : notStarted("followup", cell.get("followup").get("name").asString());
            }
            obs.set("followup", followupNode);
            ArrayNode errors = obs.putArray("transport_errors");
            transportErrors.forEach(errors::add);
            if (droppedErrors > 0) {
                errors.add(error("AdapterTruncated", null,
                        droppedErrors + " further out-of-band error reports were not recorded"));
            }
            obs.set("close", close == null ? null : pendingAsTimeout(close, reason));
            return obs;
        }
    }

    /** UTF-8 JSON to a temporary file in the target's directory, fsync, then rename into place. */
    static void writeObservation(Path file, ObjectNode obs) throws IOException {
        Path target = file.toAbsolutePath();
        Path tmp = target.resolveSibling(".observation-" + ProcessHandle.current().pid() + ".tmp");
        byte[] bytes = JSON.writeValueAsBytes(obs);
        try (FileChannel channel = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            while (buffer.hasRemaining()) channel.write(buffer);
            channel.force(true);
        }
        try {
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
    }

    /**
     * The SDK's out-of-band reports: it logs them through SLF4J (routed to java.util.logging by
     * slf4j-jdk14). Every record at WARN or above becomes {type: "LogRecord", message: level,
     * logger and the formatted message, chain: the Throwable it carries and that one's causes};
     * as the go-sdk adapter does with slog. All records still go to stderr (JUL's console
     * handler) for the evidence page.
     */
    static final class LogReports extends Handler {
        private final Run run;

        LogReports(Run run) {
            this.run = run;
        }

        @Override
        public void publish(LogRecord record) {
            if (record.getLevel().intValue() < Level.WARNING.intValue()) return;
            String level = record.getLevel().intValue() >= Level.SEVERE.intValue() ? "ERROR" : "WARN";
            ObjectNode report = error("LogRecord", null, level + " " + record.getLoggerName() + ": " + record.getMessage());
            if (record.getThrown() != null) {
                ArrayNode chain = causes(record.getThrown(), Collections.newSetFromMap(new IdentityHashMap<>()));
                report.set("chain", chain);
            }
            run.reportRecord(report);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    }
}
