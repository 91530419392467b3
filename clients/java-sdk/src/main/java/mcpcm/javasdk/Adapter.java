package mcpcm.javasdk;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.spec.McpClientTransport;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;
import tools.jackson.databind.util.RawValue;

/**
 * java-sdk adapter: the official MCP Java SDK ({@code io.modelcontextprotocol.sdk:mcp}) as an MCP
 * client, through its synchronous client {@link McpSyncClient}.
 *
 * <pre>java -jar adapter.jar &lt;cell.json&gt; &lt;observation.json&gt;      (cwd = this directory)</pre>
 *
 * The steps of clients/_support/mcp_driver.mjs on one session: {@code McpClient.sync(transport)
 * ...build()}, {@code initialize()} (initialize step; protocol_version = the InitializeResult's),
 * {@code listTools()} when option list_tools is true, every call of the cell and the follow-up
 * through {@code callTool(new CallToolRequest(name, arguments))}, then {@code closeGracefully()}.
 * Facts only (docs/adapters.md); the contract's plumbing is {@link Observe}.
 *
 * <p>Transports:
 * <ul>
 * <li>stdio: {@code StdioClientTransport(ServerParameters.builder(command).args(args).env(env)
 *     .build(), McpJsonDefaults.getMapper())}: the SDK spawns the server (our child; the SDK
 *     adds env to the inherited environment) and reads lines of at most 16 Mi characters (its
 *     default inputMaxSize).</li>
 * <li>http-json, http-sse: {@code HttpClientStreamableHttpTransport.builder(origin)
 *     .endpoint(path).build()} for server.url, its defaults otherwise (java.net.http, HTTP/1.1,
 *     resumable streams, maxResponseSize 16 MiB).</li>
 * </ul>
 *
 * <p>Protocol: the SDK only knows the initialize handshake (2025-11-25 at most); the cell's
 * protocol field is ignored (the harness reads what was spoken from the server's journal).
 *
 * <p>Timeouts: {@code requestTimeout} and {@code initializationTimeout} of the client builder are
 * both call_timeout_ms (the SDK's own per-request timeout: Reactor's {@code Mono.timeout} in
 * McpClientSession.sendRequest).
 *
 * <p>Cancellation: the SDK has no request cancellation of its own (it never sends
 * notifications/cancelled) and McpSyncClient's calls block the calling thread in Reactor's
 * {@code Mono.block()}. A blocked Java call is cancelled by interrupting its thread (what
 * {@code Future.cancel(true)} does); block() then disposes the request's subscription and throws.
 * So a call with cancel_after_ms is made on the main thread, which a timer interrupts that many ms
 * after the call started; what the call then throws is recorded.
 *
 * <p>Out-of-band errors: the transport's exception handler (the Streamable HTTP transport reports
 * its failures there; the client installs its own handler, which the adapter wraps), uncaught
 * exceptions of any thread, and every SDK/Reactor log record at WARN or above
 * ({@link Observe.LogReports}).
 *
 * <p>Options: list_tools (bool); schema_caching (bool): the builder's
 * {@code enableCallToolSchemaCaching(true)}. Only with it does the client validate
 * structuredContent against a tool's outputSchema (McpAsyncClient.validateToolResult), using the
 * schemas it cached from tools/list; it then also lists tools itself right after initialize.
 */
public final class Adapter {
    static final String NAME = "java-sdk";
    static final String PACKAGE_POM = "META-INF/maven/io.modelcontextprotocol.sdk/mcp/pom.properties";
    static final Map<String, String> OPTIONS = Map.of("list_tools", "boolean", "schema_caching", "boolean");
    static final List<String> TRANSPORTS = List.of("stdio", "http-json", "http-sse");

    private Adapter() {}

    public static void main(String[] args) {
        // One line per log record on stderr (java.util.logging's console handler, INFO and above).
        System.setProperty("java.util.logging.SimpleFormatter.format", "%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n");
        ObjectNode cell;
        try {
            if (args.length != 2) throw new Observe.BadCell("usage: java -jar adapter.jar <cell.json> <observation.json>");
            cell = Observe.readCell(args[0]);
            Observe.checkOptions(cell.get("options"), OPTIONS);
            String transport = cell.path("transport").asString("");
            if (!TRANSPORTS.contains(transport)) {
                throw new Observe.BadCell("transport " + Observe.jsonText(cell.get("transport"))
                        + " is not supported (" + String.join(", ", TRANSPORTS) + ")");
            }
            if (isHttp(cell) && !cell.path("server").path("url").isString()) {
                throw new Observe.BadCell("transport " + transport + " needs server.url");
            }
            Observe.checkCancelAfter(cell.get("calls"));
        } catch (Observe.BadCell e) {
            System.err.println(NAME + " adapter: " + e.getMessage());
            System.exit(2);
            return;
        }

        Observe.describer = Adapter::describe;
        Observe.Run run = new Observe.Run(NAME, Path.of(args[1]), cell, packageVersion());
        // The server child (stdio) is the SDK's; on an early end every process we started goes.
        run.onAbort = () -> ProcessHandle.current().descendants().forEach(ProcessHandle::destroyForcibly);
        java.util.logging.Logger.getLogger("").addHandler(new Observe.LogReports(run));
        Thread.setDefaultUncaughtExceptionHandler((thread, error) -> {
            run.reportError(error);
            error.printStackTrace();
        });
        run.guard();
        try {
            drive(cell, run);
        } catch (Throwable e) {
            System.err.println(NAME + " adapter: internal error: " + e);
            e.printStackTrace();
            run.abort("process exiting with code 1", 1);
        }
        run.finish("finished", 0);
    }

    static boolean isHttp(JsonNode cell) {
        String transport = cell.path("transport").asString("");
        return transport.equals("http-json") || transport.equals("http-sse");
    }

    /** The SDK's version as on the classpath: the mcp jar's Maven properties. */
    static String packageVersion() {
        try (InputStream in = Adapter.class.getClassLoader().getResourceAsStream(PACKAGE_POM)) {
            if (in == null) return null;
            Properties properties = new Properties();
            properties.load(in);
            return properties.getProperty("version");
        } catch (IOException e) {
            return null;
        }
    }

    /** The SDK's part of an Error record: McpError's JSON-RPC code and data. */
    static void describe(Throwable t, ObjectNode record) {
        if (t instanceof McpError mcp && mcp.getJsonRpcError() != null) {
            McpSchema.JSONRPCResponse.JSONRPCError rpc = mcp.getJsonRpcError();
            record.put("code", rpc.code());
            if (rpc.data() != null) record.set("data", Observe.JSON.valueToTree(rpc.data()));
        }
    }

    /** The client's transport for the cell's server, wrapped to hear its exception handler. */
    static McpClientTransport makeTransport(JsonNode cell, Observe.Run run) {
        JsonNode server = cell.get("server");
        McpClientTransport transport;
        if (isHttp(cell)) {
            URI url = URI.create(server.get("url").asString());
            String endpoint = url.getRawPath() + (url.getRawQuery() == null ? "" : "?" + url.getRawQuery());
            transport = HttpClientStreamableHttpTransport.builder(url.getScheme() + "://" + url.getRawAuthority())
                    .endpoint(endpoint)
                    .build();
        } else {
            List<String> args = new ArrayList<>();
            server.path("args").forEach(arg -> args.add(arg.asString()));
            Map<String, String> env = new LinkedHashMap<>();
            server.path("env").properties().forEach(e -> env.put(e.getKey(), e.getValue().asString()));
            ServerParameters params = ServerParameters.builder(server.get("command").asString())
                    .args(args)
                    .env(env)
                    .build();
            transport = new StdioClientTransport(params, McpJsonDefaults.getMapper());
        }
        return new ReportingTransport(transport, run);
    }

    /** The steps of one session (mcp_driver.mjs drive). */
    static void drive(JsonNode cell, Observe.Run run) {
        Duration timeout = Duration.ofMillis(cell.get("call_timeout_ms").asLong());
        JsonNode options = cell.get("options");
        McpSyncClient client = McpClient.sync(makeTransport(cell, run))
                .clientInfo(new McpSchema.Implementation("mcp-client-matrix", "0.1.0"))
                .requestTimeout(timeout)
                .initializationTimeout(timeout)
                .enableCallToolSchemaCaching(options.path("schema_caching").asBoolean(false))
                .build();
        ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "adapter-cancel");
            thread.setDaemon(true);
            return thread;
        });

        Observe.Step init = run.begin("initialize", null);
        run.initialize = init;
        boolean connected = false;
        try {
            McpSchema.InitializeResult result = client.initialize();
            run.settle(init, s -> {
                s.status = "ok";
                s.protocolVersion = result.protocolVersion();
            });
            connected = true;
        } catch (Throwable e) {
            McpSchema.InitializeResult current = client.getCurrentInitializationResult();
            run.settle(init, s -> {
                s.error = Observe.errorRecord(e);
                s.protocolVersion = current == null ? null : current.protocolVersion();
            });
        }

        if (connected) {
            if (options.path("list_tools").asBoolean(false)) {
                Observe.Step step = run.begin("list_tools", null);
                run.listTools = step;
                try {
                    McpSchema.ListToolsResult listed = client.listTools();
                    List<String> names = listed.tools().stream().map(McpSchema.Tool::name).toList();
                    run.settle(step, s -> {
                        s.status = "ok";
                        s.tools = names;
                    });
                } catch (Throwable e) {
                    run.settle(step, s -> s.error = Observe.errorRecord(e));
                }
            }
            for (JsonNode call : cell.get("calls")) {
                callStep(run, client, timers, call, step -> {
                    synchronized (run) {
                        run.calls.add(step);
                    }
                });
            }
            callStep(run, client, timers, cell.get("followup"), step -> {
                synchronized (run) {
                    run.followup = step;
                }
            });
        }

        Observe.Step close = run.begin("close", null);
        synchronized (run) {
            run.close = close;
        }
        try {
            // closeGracefully() waits up to 10 s itself and returns false (logging a WARN with the
            // exception) when the close failed or did not finish in time.
            boolean closed = client.closeGracefully();
            run.settle(close, s -> {
                if (closed) s.status = "ok";
                else s.error = Observe.error("CloseNotGraceful", null,
                        "McpSyncClient.closeGracefully() returned false (the close failed or took over 10000 ms)");
            });
        } catch (Throwable e) {
            run.settle(close, s -> s.error = Observe.errorRecord(e));
        }
    }

    /**
     * One callTool. With cancel_after_ms, a timer interrupts this (the calling) thread that many
     * ms after the call started unless it returned first; cancelled_after_ms is when it did.
     */
    static void callStep(Observe.Run run, McpSyncClient client, ScheduledExecutorService timers, JsonNode call,
            Consumer<Observe.Step> place) {
        String name = call.get("name").asString();
        Observe.Step step = run.begin("call", name);
        place.accept(step);
        JsonNode after = call.get("cancel_after_ms");
        boolean cancellable = after != null && !after.isNull();
        Thread caller = Thread.currentThread();
        boolean[] done = {false};
        ScheduledFuture<?> timer = null;
        if (cancellable) {
            step.cancellable = true;
            timer = timers.schedule(() -> {
                synchronized (done) {
                    if (done[0]) return;
                    step.cancelledAfterMs = step.elapsed();
                    caller.interrupt();
                }
            }, after.asLong(), TimeUnit.MILLISECONDS);
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> arguments = call.hasNonNull("arguments")
                ? Observe.JSON.convertValue(call.get("arguments"), Map.class)
                : null;
        McpSchema.CallToolResult result = null;
        Throwable raised = null;
        try {
            result = client.callTool(new McpSchema.CallToolRequest(name, arguments));
        } catch (Throwable e) {
            raised = e;
        }
        synchronized (done) {
            done[0] = true;
        }
        if (timer != null) timer.cancel(false);
        Thread.interrupted(); // the interrupt (Reactor re-asserts it) must not reach the next call
        if (raised != null) {
            ObjectNode error = Observe.errorRecord(raised);
            run.settle(step, s -> s.error = error);
        } else {
            Object json = sdkJson(result);
            run.settle(step, s -> {
                s.status = "returned";
                s.result = json;
            });
        }
    }

    /** The result in the SDK's own JSON mapping (McpJsonMapper, Jackson 3), not re-shaped. */
    static Object sdkJson(Object value) {
        McpJsonMapper mapper = McpJsonDefaults.getMapper();
        try {
            return new RawValue(mapper.writeValueAsString(value));
        } catch (IOException | RuntimeException e) {
            System.err.println(NAME + " adapter: the result could not be serialized by the SDK's mapper: " + e);
            return Observe.JSON.getNodeFactory().stringNode(String.valueOf(value));
        }
    }

    /**
     * The SDK's transport, unchanged, except that the exception handler the client installs
     * (McpClientTransport.setExceptionHandler) also records what it is given.
     */
    static final class ReportingTransport implements McpClientTransport {
        private final McpClientTransport delegate;
        private final Observe.Run run;

        ReportingTransport(McpClientTransport delegate, Observe.Run run) {
            this.delegate = delegate;
            this.run = run;
        }

        @Override
        public Mono<Void> connect(Function<Mono<McpSchema.JSONRPCMessage>, Mono<McpSchema.JSONRPCMessage>> handler) {
            return delegate.connect(handler);
        }

        @Override
        public void setExceptionHandler(Consumer<Throwable> handler) {
            delegate.setExceptionHandler(error -> {
                run.reportError(error);
                handler.accept(error);
            });
        }

        @Override
        public Mono<Void> closeGracefully() {
            return delegate.closeGracefully();
        }

        @Override
        public void close() {
            delegate.close();
        }

        @Override
        public Mono<Void> sendMessage(McpSchema.JSONRPCMessage message) {
            return delegate.sendMessage(message);
        }

        @Override
        public <T> T unmarshalFrom(Object data, TypeRef<T> typeRef) {
            return delegate.unmarshalFrom(data, typeRef);
        }

        @Override
        public List<String> protocolVersions() {
            return delegate.protocolVersions();
        }
    }
}
