// The adapter contract (docs/adapters.md), the Kotlin twin of clients/_support/observe.mjs and the
// run skeleton of its createRun: the cell file and its options, the Error record, the observation
// with "pending" steps, the budget watchdog, the atomic write. Nothing here knows the SDK; Adapter.kt
// drives it. JSON is kotlinx.serialization, the library the SDK itself uses.
package mcpcm.kotlinsdk

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.doubleOrNull
import java.nio.ByteBuffer
import java.nio.channels.FileChannel
import java.nio.file.Files
import java.nio.file.Path
import java.nio.file.StandardCopyOption
import java.nio.file.StandardOpenOption
import java.util.Collections
import java.util.IdentityHashMap
import java.util.logging.Handler
import java.util.logging.Level
import java.util.logging.LogRecord
import kotlin.math.roundToLong

const val CONTRACT = 1

/** How many causes an Error's chain holds at most. */
const val MAX_CHAIN = 10

/** How many out-of-band errors an observation keeps. */
const val MAX_TRANSPORT_ERRORS = 1000

/** The keys a cell file must have (both support runtimes check the same ones). */
val CELL_KEYS = listOf("cell_id", "options", "server", "calls", "followup", "call_timeout_ms", "budget_ms")

// ------------------------------------------------------------------ the cell file (exit 2 on any problem)

/** A bad command line, cell file or option: one line on stderr, exit status 2. */
class BadCell(message: String) : RuntimeException(message)

fun jsonText(value: JsonElement?): String = value?.toString() ?: "null"

/** observe.mjs readCell: the parsed cell, or BadCell with the shared messages. */
fun readCell(file: String): JsonObject {
    val cell = try {
        Json.parseToJsonElement(Files.readString(Path.of(file)))
    } catch (e: Exception) {
        throw BadCell("cannot read cell file $file: ${e.message}")
    }
    if (cell !is JsonObject) throw BadCell("$file: the cell is not a JSON object")
    val contract = cell["contract"]
    if (!(isInteger(contract) && (contract as JsonPrimitive).doubleOrNull == CONTRACT.toDouble())) {
        throw BadCell("$file: contract ${jsonText(contract)} is not supported (expected $CONTRACT)")
    }
    val missing = CELL_KEYS.filter { it !in cell }
    if (missing.isNotEmpty()) throw BadCell("$file: missing key(s): ${missing.joinToString(", ")}")
    return cell
}

/** A JSON number with an integral value (JavaScript's Number.isInteger: 3.0 counts). */
fun isInteger(node: JsonElement?): Boolean {
    if (node !is JsonPrimitive || node.isString || node is JsonNull) return false
    val d = node.doubleOrNull ?: return false
    return d.isFinite() && d == Math.rint(d)
}

/** observe.mjs checkOptions: every unknown option or mistyped value, joined by "; ". */
fun checkOptions(options: JsonElement?, known: Map<String, String>) {
    if (options !is JsonObject) throw BadCell("options: expected an object, got ${jsonText(options)}")
    val problems = mutableListOf<String>()
    for ((key, value) in options) {
        val quoted = JsonPrimitive(key).toString()
        val want = known[key]
        if (want == null) {
            val names = if (known.isEmpty()) "none" else known.keys.sorted().joinToString(", ")
            problems += "unknown option $quoted (this adapter understands: $names)"
            continue
        }
        val primitive = value as? JsonPrimitive
        val ok = when (want) {
            "boolean" -> primitive != null && !primitive.isString && primitive.booleanOrNull != null
            "integer" -> isInteger(value)
            "number" -> primitive != null && !primitive.isString && primitive.doubleOrNull != null
            else -> primitive != null && primitive.isString
        }
        if (!ok) problems += "option $quoted: expected $want, got ${jsonText(value)}"
    }
    if (problems.isNotEmpty()) throw BadCell(problems.joinToString("; "))
}

/** observe.mjs checkCancelAfter: a call's cancel_after_ms is absent, null or a non-negative integer. */
fun checkCancelAfter(calls: JsonArray) {
    for (call in calls) {
        val after = (call as? JsonObject)?.get("cancel_after_ms")
        if (after != null && after !is JsonNull && !(isInteger(after) && (after as JsonPrimitive).doubleOrNull!! >= 0)) {
            throw BadCell("cancel_after_ms: expected a non-negative integer, got ${jsonText(after)}")
        }
    }
}

// ------------------------------------------------------------------ Error records

fun error(type: String, code: Int?, message: String?): MutableMap<String, JsonElement> = linkedMapOf(
    "type" to JsonPrimitive(type),
    "code" to (code?.let { JsonPrimitive(it) } ?: JsonNull),
    "message" to JsonPrimitive(message ?: ""),
)

/** The class name without the package, as a stack trace shows it. */
fun typeName(t: Throwable): String = t.javaClass.simpleName.ifEmpty { t.javaClass.name }

/** The SDK-specific part of an Error record (Adapter.kt describe): its code and data. */
var describer: (Throwable, MutableMap<String, JsonElement>) -> Unit = { _, _ -> }

fun flatRecord(t: Throwable): MutableMap<String, JsonElement> =
    error(typeName(t), null, t.message).also { describer(t, it) }

private fun causes(first: Throwable?, seen: MutableSet<Throwable>): JsonArray {
    val chain = mutableListOf<JsonElement>()
    var c = first
    while (c != null && chain.size < MAX_CHAIN && seen.add(c)) {
        chain += JsonObject(flatRecord(c))
        c = c.cause
    }
    return JsonArray(chain)
}

/**
 * Anything thrown -> the contract's Error: {type, code, message}, plus data (a JSON-RPC error's
 * data) and chain: the cause links, innermost last, each once, at most [MAX_CHAIN].
 */
fun errorRecord(t: Throwable): JsonObject {
    val record = flatRecord(t)
    val seen = Collections.newSetFromMap(IdentityHashMap<Throwable, Boolean>()).also { it.add(t) }
    val chain = causes(t.cause, seen)
    if (chain.isNotEmpty()) record["chain"] = chain
    return JsonObject(record)
}

/** A duration as JavaScript prints it: 41.2, 1200 (no ".0"). */
fun number(ms: Double): String = if (ms == Math.rint(ms)) ms.toLong().toString() else ms.toString()

/** observe.mjs deadlineError: the AdapterTimeout of a step ended (elapsedMs) or never started (null). */
fun deadlineError(what: String, elapsedMs: Double?, reason: String?): JsonObject {
    var message = if (elapsedMs == null) {
        "adapter deadline: $what not started, the adapter's deadline had passed"
    } else {
        "adapter deadline: $what ended by the adapter after ${number(elapsedMs)} ms"
    }
    if (reason != null) message += " ($reason)"
    return JsonObject(error("AdapterTimeout", null, message))
}

// ------------------------------------------------------------------ the run

/** One step of the observation: entered pending (raised, AdapterTimeout when written so), then settled. */
class Step(val kind: String, val tool: String?) {
    private val t0 = System.nanoTime()
    var pending = true
    var status = "raised"
    var error: JsonElement = JsonNull
    var result: JsonElement = JsonNull
    var protocolVersion: String? = null
    var tools: List<String>? = null
    var cancellable = false // the call had cancel_after_ms: cancelled_after_ms is recorded
    var cancelledAfterMs: Double? = null
    var durationMs = 0.0

    /** Milliseconds since the step began, 0.1 ms resolution. */
    fun elapsed(): Double = ((System.nanoTime() - t0) / 100_000.0).roundToLong() / 10.0

    fun toJson(): JsonObject {
        val node = linkedMapOf<String, JsonElement>()
        if (tool != null) node["tool"] = JsonPrimitive(tool)
        node["status"] = JsonPrimitive(status)
        if (tool != null) node["result"] = result
        node["error"] = error
        if (kind == "initialize") node["protocol_version"] = JsonPrimitive(protocolVersion)
        if (kind == "list_tools") node["tools"] = tools?.let { names -> JsonArray(names.map { JsonPrimitive(it) }) } ?: JsonNull
        node["duration_ms"] = JsonPrimitive(durationMs)
        if (cancellable) node["cancelled_after_ms"] = JsonPrimitive(cancelledAfterMs)
        return JsonObject(node)
    }
}

/**
 * The observation of one cell, schema-complete at every moment (observe.mjs createRun): a step is
 * pending until settled; whatever ends the run (the budget watchdog, a signal, the normal end)
 * writes the facts gathered so far, with a pending step as AdapterTimeout and, after a successful
 * initialize, the calls and follow-up never started as AdapterTimeout "not started". Every
 * mutation holds the run's monitor, so the watchdog writes a consistent picture.
 */
class Run(private val name: String, private val obsPath: Path, private val cell: JsonObject, private val packageVersion: String?) {
    private val deadlineEpochMs: Long
    private val deadlineReason: String
    var onAbort: () -> Unit = {}

    var initialize: Step? = null
    var listTools: Step? = null
    val calls = mutableListOf<Step>()
    var followup: Step? = null
    var close: Step? = null
    private val transportErrors = mutableListOf<JsonElement>()
    private var droppedErrors = 0
    private val seenErrors = Collections.newSetFromMap(IdentityHashMap<Throwable, Boolean>())
    private var written = false

    init {
        // The watchdog fires at budget_ms minus a margin (5 % of the budget, 0.5..2 s, as
        // observe.mjs), counted from the JVM process's start: the harness's budget runs from there.
        val budgetMs = (cell["budget_ms"] as JsonPrimitive).doubleOrNull!!.toLong()
        val margin = minOf(2000.0, maxOf(500.0, budgetMs * 0.05))
        val deadline = (budgetMs - margin).roundToLong()
        val started = ProcessHandle.current().info().startInstant().map { it.toEpochMilli() }
            .orElse(System.currentTimeMillis())
        deadlineEpochMs = started + deadline
        deadlineReason = "budget watchdog at $deadline ms of $budgetMs ms"
    }

    /** Start the watchdog and the JVM-shutdown guard (SIGTERM, SIGINT). */
    fun guard() {
        val watchdog = Thread({
            try {
                Thread.sleep(maxOf(0L, deadlineEpochMs - System.currentTimeMillis()))
                abort(deadlineReason, 0)
            } catch (e: InterruptedException) {
                // not reached: the process halts first
            }
        }, "adapter-watchdog")
        watchdog.isDaemon = true
        watchdog.start()
        Runtime.getRuntime().addShutdownHook(Thread({
            if (synchronized(this) { written }) return@Thread
            runOnAbort()
            write("JVM shutting down (SIGTERM, SIGINT or exit)")
        }, "adapter-shutdown"))
    }

    fun msLeft(): Long = deadlineEpochMs - System.currentTimeMillis()

    /** Settle a pending step: [patch] fills status, result/error and the like. */
    @Synchronized
    fun settle(step: Step, patch: Step.() -> Unit) {
        if (!step.pending) return
        step.patch()
        step.pending = false
        step.durationMs = step.elapsed()
    }

    @Synchronized
    fun place(update: Run.() -> Unit) = update()

    /** An out-of-band error (each Throwable once; beyond 1,000 only counted). */
    @Synchronized
    fun reportError(t: Throwable) {
        if (seenErrors.add(t)) reportRecord(errorRecord(t))
    }

    @Synchronized
    fun reportRecord(record: JsonElement) {
        if (transportErrors.size >= MAX_TRANSPORT_ERRORS) droppedErrors++ else transportErrors += record
    }

    private fun runOnAbort() {
        try {
            onAbort()
        } catch (e: RuntimeException) {
            // best effort
        }
    }

    /** Write the observation (once) and end the process with [status]. */
    fun finish(reason: String, status: Int): Nothing {
        write(reason)
        System.out.flush()
        System.err.flush()
        Runtime.getRuntime().halt(status)
        throw IllegalStateException("halted")
    }

    /** End early (watchdog, internal error): kill the server child first, as observe.mjs abort. */
    fun abort(reason: String, status: Int): Nothing {
        runOnAbort()
        finish(reason, status)
    }

    @Synchronized
    fun write(reason: String) {
        if (written) return
        written = true
        try {
            writeObservation(obsPath, snapshot(reason))
        } catch (e: Exception) {
            System.err.println("$name adapter: cannot write the observation: $e")
        }
    }

    private fun pendingAsTimeout(step: Step, reason: String): JsonObject {
        if (step.pending) {
            step.durationMs = step.elapsed()
            val what = if (step.tool == null) step.kind else "${step.kind} ${step.tool}"
            step.error = deadlineError(what, step.durationMs, reason)
            step.status = "raised"
            step.result = JsonNull
        }
        return step.toJson()
    }

    private fun notStarted(kind: String, tool: String): JsonObject = JsonObject(
        linkedMapOf(
            "tool" to JsonPrimitive(tool),
            "status" to JsonPrimitive("raised"),
            "result" to JsonNull,
            "error" to deadlineError("$kind $tool", null, null),
            "duration_ms" to JsonPrimitive(0),
        ),
    )

    private fun toolName(call: JsonElement): String = ((call as JsonObject)["name"] as JsonPrimitive).content

    /** The observation as observe.mjs writes it (finalizePending + completeSteps). */
    private fun snapshot(reason: String): JsonObject {
        val obs = linkedMapOf<String, JsonElement>()
        obs["contract"] = JsonPrimitive(CONTRACT)
        obs["package_version"] = JsonPrimitive(packageVersion)
        obs["runtime_version"] = JsonPrimitive(System.getProperty("java.version"))
        val init = initialize?.let { pendingAsTimeout(it, reason) } ?: JsonObject(
            linkedMapOf(
                "status" to JsonPrimitive("raised"),
                "error" to deadlineError("initialize", null, null),
                "protocol_version" to JsonNull,
                "duration_ms" to JsonPrimitive(0),
            ),
        )
        obs["initialize"] = init
        obs["list_tools"] = listTools?.let { pendingAsTimeout(it, reason) } ?: JsonNull
        val callNodes = mutableListOf<JsonElement>()
        var followupNode: JsonElement = JsonNull
        if ((init["status"] as JsonPrimitive).content == "ok") {
            calls.forEach { callNodes += pendingAsTimeout(it, reason) }
            val cellCalls = cell["calls"] as JsonArray
            for (i in calls.size until cellCalls.size) callNodes += notStarted("call", toolName(cellCalls[i]))
            followupNode = followup?.let { pendingAsTimeout(it, reason) } ?: notStarted("followup", toolName(cell["followup"]!!))
        }
        obs["calls"] = JsonArray(callNodes)
        obs["followup"] = followupNode
        val errors = transportErrors.toMutableList()
        if (droppedErrors > 0) {
            errors += JsonObject(error("AdapterTruncated", null, "$droppedErrors further out-of-band error reports were not recorded"))
        }
        obs["transport_errors"] = JsonArray(errors)
        obs["close"] = close?.let { pendingAsTimeout(it, reason) } ?: JsonNull
        return JsonObject(obs)
    }
}

/** UTF-8 JSON to a temporary file in the target's directory, fsync, then rename into place. */
fun writeObservation(file: Path, obs: JsonObject) {
    val target = file.toAbsolutePath()
    val tmp = target.resolveSibling(".observation-${ProcessHandle.current().pid()}.tmp")
    val bytes = Json.encodeToString(JsonObject.serializer(), obs).toByteArray(Charsets.UTF_8)
    FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING).use { channel ->
        val buffer = ByteBuffer.wrap(bytes)
        while (buffer.hasRemaining()) channel.write(buffer)
        channel.force(true)
    }
    try {
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
    } catch (e: Exception) {
        Files.deleteIfExists(tmp)
        throw e
    }
}

/**
 * The SDK's out-of-band reports that do not reach Client.onError: it logs them through
 * kotlin-logging / SLF4J (routed to java.util.logging by slf4j-jdk14). Every record at WARN or
 * above becomes {type: "LogRecord", message: level, logger and message, chain: the Throwable it
 * carries and its causes}, as the java-sdk and go-sdk adapters do. All records still go to stderr
 * (JUL's console handler) for the evidence page.
 */
class LogReports(private val run: Run) : Handler() {
    override fun publish(record: LogRecord) {
        if (record.level.intValue() < Level.WARNING.intValue()) return
        val level = if (record.level.intValue() >= Level.SEVERE.intValue()) "ERROR" else "WARN"
        val report = error("LogRecord", null, "$level ${record.loggerName}: ${record.message}")
        record.thrown?.let { report["chain"] = causes(it, Collections.newSetFromMap(IdentityHashMap())) }
        run.reportRecord(JsonObject(report))
    }

    override fun flush() {}

    override fun close() {}
}
