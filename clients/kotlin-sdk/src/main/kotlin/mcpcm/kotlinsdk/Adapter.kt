// kotlin-sdk adapter: the official MCP Kotlin SDK (io.modelcontextprotocol:kotlin-sdk-client-jvm) as
// an MCP client: its own Client with its StdioClientTransport and StreamableHttpClientTransport.
//
//   java -jar adapter.jar <cell.json> <observation.json>      (cwd = this directory)
//
// The steps of clients/_support/mcp_driver.mjs on one session: Client.connect(transport) (the
// initialize step), Client.listTools when option list_tools is true, every call of the cell and the
// follow-up through Client.callTool(CallToolRequest, RequestOptions), then Client.close(). Facts only
// (docs/adapters.md); the contract's plumbing is Observe.kt.
//
// Transports:
//  - stdio: the SDK's StdioClientTransport takes the server's streams, not a command (its README:
//    the application starts the process): ProcessBuilder(command + args) with server.env added,
//    then StdioClientTransport(input = stdout, output = stdin, error = stderr) as kotlinx-io
//    buffered Source/Sink; the server is our child. The SDK reads frames through ReadBuffer (16 MiB
//    cap per line) and classifies stderr lines with its default (DEBUG: not shown).
//  - http-json, http-sse: StreamableHttpClientTransport(HttpClient(CIO) { install(SSE) }, url), as the
//    SDK's README builds it, its defaults otherwise.
// Protocol: the SDK only speaks the initialize handshake; the cell's protocol field is ignored.
// protocol_version: not exposed, recorded null. The Client keeps the initialize result to itself
// (StreamableHttpClientTransport has a public protocolVersion, but nothing in the SDK sets it).
//
// Timeouts: every request carries RequestOptions(timeout = call_timeout_ms), the SDK's own
// per-request timeout (Protocol.request: withTimeoutOrNull, then McpException REQUEST_TIMEOUT and
// notifications/cancelled). connect() takes no options: its initialize request always gets the SDK's
// DEFAULT_REQUEST_TIMEOUT (60 s; ProtocolOptions.timeout is never read), so connect runs inside
// withTimeout(call_timeout_ms), the coroutine deadline an application puts around it.
//
// Cancellation: coroutine cancellation is the SDK's own (Protocol.request sends
// notifications/cancelled and rethrows). A call with cancel_after_ms runs as an async child of a
// supervisorScope whose Deferred is cancelled that many ms after the call started.
//
// Out-of-band errors: Client.onError (the Protocol's callback, which the transports' onError feed)
// and every SDK/Ktor log record at WARN or above (Observe.kt LogReports), uncaught exceptions of
// any thread.
package mcpcm.kotlinsdk

import io.ktor.client.HttpClient
import io.ktor.client.engine.cio.CIO
import io.ktor.client.plugins.sse.SSE
import io.modelcontextprotocol.kotlin.sdk.client.Client
import io.modelcontextprotocol.kotlin.sdk.client.StdioClientTransport
import io.modelcontextprotocol.kotlin.sdk.client.StreamableHttpClientTransport
import io.modelcontextprotocol.kotlin.sdk.client.StreamableHttpError
import io.modelcontextprotocol.kotlin.sdk.shared.AbstractTransport
import io.modelcontextprotocol.kotlin.sdk.shared.RequestOptions
import io.modelcontextprotocol.kotlin.sdk.types.CallToolRequest
import io.modelcontextprotocol.kotlin.sdk.types.CallToolRequestParams
import io.modelcontextprotocol.kotlin.sdk.types.CallToolResult
import io.modelcontextprotocol.kotlin.sdk.types.Implementation
import io.modelcontextprotocol.kotlin.sdk.types.McpException
import io.modelcontextprotocol.kotlin.sdk.types.McpJson
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.supervisorScope
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.io.asSink
import kotlinx.io.asSource
import kotlinx.io.buffered
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.doubleOrNull
import java.nio.file.Path
import java.util.concurrent.TimeUnit
import kotlin.system.exitProcess
import kotlin.time.Duration.Companion.milliseconds

const val NAME = "kotlin-sdk"
val OPTIONS = mapOf("list_tools" to "boolean")
val TRANSPORTS = listOf("stdio", "http-json", "http-sse")

/** How long Client.close() may take (mcp_driver.mjs CLOSE_WAIT_MS). */
const val CLOSE_WAIT_MS = 6000L

fun main(args: Array<String>) {
    // One line per log record on stderr (java.util.logging's console handler, INFO and above).
    System.setProperty("java.util.logging.SimpleFormatter.format", "%1\$tT.%1\$tL %4\$s %3\$s: %5\$s%6\$s%n")
    val cell = try {
        if (args.size != 2) throw BadCell("usage: java -jar adapter.jar <cell.json> <observation.json>")
        readCell(args[0]).also { cell ->
            checkOptions(cell["options"], OPTIONS)
            val transport = (cell["transport"] as? JsonPrimitive)?.content
            if (transport !in TRANSPORTS) {
                throw BadCell("transport ${jsonText(cell["transport"])} is not supported (${TRANSPORTS.joinToString(", ")})")
            }
            val url = (cell["server"] as? JsonObject)?.get("url") as? JsonPrimitive
            if (isHttp(cell) && (url == null || !url.isString)) throw BadCell("transport $transport needs server.url")
            checkCancelAfter(cell["calls"] as? JsonArray ?: throw BadCell("calls: expected a list"))
        }
    } catch (e: BadCell) {
        System.err.println("$NAME adapter: ${e.message}")
        exitProcess(2)
    }

    describer = ::describe
    val run = Run(NAME, Path.of(args[1]), cell, packageVersion())
    // The stdio server is our child; on an early end every process we started goes.
    run.onAbort = { ProcessHandle.current().descendants().forEach { it.destroyForcibly() } }
    java.util.logging.Logger.getLogger("").addHandler(LogReports(run))
    Thread.setDefaultUncaughtExceptionHandler { _, error ->
        run.reportError(error)
        error.printStackTrace()
    }
    run.guard()
    try {
        runBlocking { drive(cell, run) }
    } catch (e: Throwable) {
        System.err.println("$NAME adapter: internal error: $e")
        e.printStackTrace()
        run.abort("process exiting with code 1", 1)
    }
    run.finish("finished", 0)
}

fun isHttp(cell: JsonObject): Boolean = (cell["transport"] as? JsonPrimitive)?.content in listOf("http-json", "http-sse")

/** The SDK's version as on the classpath: kotlin-sdk-core's LIB_VERSION, read reflectively at run time
 *  (the Gradle-published jars carry no Maven pom.properties). */
fun packageVersion(): String? = try {
    Class.forName("io.modelcontextprotocol.kotlin.sdk.LibVersionKt").getField("LIB_VERSION").get(null) as String
} catch (e: ReflectiveOperationException) {
    null
}

/** The SDK's part of an Error record: McpException's JSON-RPC code and data; StreamableHttpError's HTTP status. */
fun describe(t: Throwable, record: MutableMap<String, JsonElement>) {
    when (t) {
        is McpException -> {
            record["code"] = JsonPrimitive(t.code)
            t.data?.takeIf { it !is JsonNull }?.let { record["data"] = it }
        }
        is StreamableHttpError -> t.code?.let { record["code"] = JsonPrimitive(it) }
    }
}

private fun JsonObject.str(key: String): String = (this[key] as JsonPrimitive).content

/** The pieces of one connection: the transport, and what the application owns beside it. */
class Connection(val transport: AbstractTransport, val process: Process?, val http: HttpClient?)

/** The SDK's transport for the cell's server (stdio: starts the server, as an application does). */
fun connection(cell: JsonObject): Connection {
    val server = cell["server"] as JsonObject
    if (isHttp(cell)) {
        val http = HttpClient(CIO) { install(SSE) }
        return Connection(StreamableHttpClientTransport(http, server.str("url")), null, http)
    }
    val command = listOf(server.str("command")) + ((server["args"] as? JsonArray) ?: JsonArray(emptyList())).map { (it as JsonPrimitive).content }
    val builder = ProcessBuilder(command)
    (server["env"] as? JsonObject)?.forEach { (key, value) -> builder.environment()[key] = (value as JsonPrimitive).content }
    val process = builder.start()
    val transport = StdioClientTransport(
        input = process.inputStream.asSource().buffered(),
        output = process.outputStream.asSink().buffered(),
        error = process.errorStream.asSource().buffered(),
    )
    return Connection(transport, process, null)
}

/** The steps of one session (mcp_driver.mjs drive). */
suspend fun drive(cell: JsonObject, run: Run) {
    val timeout = (cell["call_timeout_ms"] as JsonPrimitive).doubleOrNull!!.toLong().milliseconds
    val requestOptions = RequestOptions(timeout = timeout)
    val options = cell["options"] as JsonObject
    val client = object : Client(Implementation(name = "mcp-client-matrix", version = "0.1.0")) {
        override fun onError(error: Throwable) = run.reportError(error)
    }

    val init = Step("initialize", null)
    run.place { initialize = init }
    var conn: Connection? = null
    var connected = false
    try {
        conn = connection(cell)
        withTimeout(timeout) { client.connect(conn.transport) }
        run.settle(init) { status = "ok" }
        connected = true
    } catch (e: Throwable) {
        run.settle(init) { error = errorRecord(e) }
    }

    if (connected) {
        if ((options["list_tools"] as? JsonPrimitive)?.booleanOrNull == true) {
            val step = Step("list_tools", null)
            run.place { listTools = step }
            try {
                val names = client.listTools(options = requestOptions).tools.map { it.name }
                run.settle(step) {
                    status = "ok"
                    tools = names
                }
            } catch (e: Throwable) {
                run.settle(step) { error = errorRecord(e) }
            }
        }
        for (call in cell["calls"] as JsonArray) {
            callStep(run, client, call as JsonObject, requestOptions) { step -> run.place { calls += step } }
        }
        callStep(run, client, cell["followup"] as JsonObject, requestOptions) { step -> run.place { followup = step } }
    }

    val close = Step("close", null)
    run.place { this.close = close }
    val bound = minOf(CLOSE_WAIT_MS, run.msLeft() - 200).coerceAtLeast(0)
    val closed = withTimeoutOrNull(bound) { runCatching { client.close() } }
    if (closed == null) run.abort("close wait bound of $bound ms", 0)
    closed.fold(
        onSuccess = { run.settle(close) { status = "ok" } },
        onFailure = { e -> run.settle(close) { error = errorRecord(e) } },
    )
    // What the application owns beside the client: its HTTP client, and the server it started
    // (which ends on its stdin's end-of-file; a straggler is stopped).
    conn?.http?.close()
    conn?.process?.let { process ->
        if (!process.waitFor(2, TimeUnit.SECONDS)) process.destroy()
    }
}

/**
 * One callTool. With cancel_after_ms, the call runs as an async child whose Deferred is cancelled
 * that many ms after the call started unless it completed first; cancelled_after_ms is when.
 */
suspend fun callStep(run: Run, client: Client, call: JsonObject, requestOptions: RequestOptions, place: (Step) -> Unit) {
    val name = call.str("name")
    val step = Step("call", name)
    place(step)
    val after = call["cancel_after_ms"]?.takeIf { it !is JsonNull } as JsonPrimitive?
    step.cancellable = after != null
    val request = CallToolRequest(CallToolRequestParams(name = name, arguments = call["arguments"] as? JsonObject))
    val outcome: Result<CallToolResult> = supervisorScope {
        val pending = async { client.callTool(request, requestOptions) }
        val canceller = after?.let {
            launch {
                delay(it.doubleOrNull!!.toLong())
                if (!pending.isCompleted) {
                    step.cancelledAfterMs = step.elapsed()
                    pending.cancel()
                }
            }
        }
        val done = runCatching { pending.await() }
        canceller?.cancel()
        done
    }
    outcome.fold(
        onSuccess = { result ->
            // The result in the SDK's own JSON mapping (McpJson), not re-shaped.
            val json = McpJson.encodeToJsonElement(CallToolResult.serializer(), result)
            run.settle(step) {
                status = "returned"
                this.result = json
            }
        },
        onFailure = { e -> run.settle(step) { error = errorRecord(e) } },
    )
}
