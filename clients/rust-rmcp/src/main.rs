//! rust-rmcp adapter: the official MCP Rust SDK (`rmcp`) as an MCP client.
//!
//! ```text
//! ENV/target/release/adapter <cell.json> <observation.json>      (cwd = this directory)
//! ```
//!
//! The steps of `clients/_support/mcp_driver.mjs`, on one session, through the SDK's own API as an
//! application uses it (docs/adapters.md is the contract; facts only, never a verdict):
//!
//! - `initialize`: a `ClientConfig` (`clientInfo` mcp-client-matrix 0.1.0, default capabilities)
//!   is served with `ServiceExt::serve` over `TokioChildProcess` (stdio: the SDK spawns
//!   `server.command` with `server.args`, `server.env` added to the environment) or over
//!   `StreamableHttpClientTransport::from_uri(server.url)` (`http-json` and `http-sse`: the same
//!   reqwest-based Streamable HTTP client). The agreed version is `peer_info().protocol_version`.
//! - `list_tools` (variant option `list_tools`): `Peer::list_tools(None)`, one page.
//! - every call of the cell, then the follow-up: `Peer::call_tool`; `result` is the SDK's
//!   `CallToolResult` serialized with its own serde mapping (a missing `content` comes back as the
//!   `[]` its deserializer defaults to: evidence, kept as is; objects inside it, such as
//!   `structuredContent`, come back with their keys sorted, as rmcp's `serde_json::Value` holds them).
//! - `close`: `RunningService::close` (for stdio the SDK closes the server's stdin, waits 3 s,
//!   sends SIGTERM, waits 3 s, kills), awaited at most [`CLOSE_WAIT`] and never past the watchdog.
//!
//! Protocol revisions (the cell's `protocol`): for 2025-11-25 the client keeps `serve`, the SDK's
//! default legacy lifecycle (`initialize`, asking for the SDK's default `ProtocolVersion::LATEST`
//! and accepting what the server answers); for 2026-07-28 it uses
//! `ClientServiceExt::serve_with_lifecycle` with `ClientLifecycleMode::Auto` (probe
//! `server/discover` for 2026-07-28, fall back to `initialize` at 2025-11-25), the SDK's dual-era
//! mode. Which revision it spoke is read by the harness from the server's journal.
//!
//! Timeouts and cancellation. `Peer::call_tool` / `list_tools` take no request options: the SDK's
//! per-request timeout (`PeerRequestOptions::timeout`) exists only on the raw
//! `Peer::send_request_with_option`, which would bypass `call_tool`'s own result handling. So
//! `call_timeout_ms` is a `tokio::time::timeout` around each step (initialize included), and a
//! call with `cancel_after_ms` races a `tokio_util` `CancellationToken` that a timer cancels
//! that many ms after the call started. Either way the call's future is dropped, which is the
//! SDK's cancellation for its request helpers: their drop guard (`AbandonedRequestGuard`) sends
//! `notifications/cancelled` ("request abandoned by the caller"). A dropped call yields no error
//! of the SDK's own, so a timeout is recorded as tokio's `Elapsed` and a cancellation as the
//! reserved `Cancelled`.
//!
//! Out-of-band errors: see `oob.rs` (rmcp's WARN/ERROR `tracing` events, panics). The observation,
//! deadlines and the watchdog: `observe.rs`. `package_version` is rmcp's version in `Cargo.lock`
//! (the working directory is this directory); `runtime_version` is `rustc --version` at build time.

mod observe;
mod oob;

use std::collections::HashMap;
use std::error::Error;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ErrorData, Implementation,
    ProtocolVersion,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, RunningService,
    ServiceError, ServiceExt,
};
use rmcp::transport::streamable_http_client::{HttpStatusError, SseError, StreamableHttpError};
use rmcp::transport::{
    DynamicTransportError, IntoTransport, StreamableHttpClientTransport, TokioChildProcess,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use observe::{Record, Slot};

/// The variant options this adapter understands, with their types.
const KNOWN_OPTIONS: &[(&str, &str)] = &[("list_tools", "boolean")];
const TRANSPORTS: [&str; 3] = ["stdio", "http-json", "http-sse"];
/// The `clientInfo` every adapter's client announces.
const CLIENT_NAME: &str = "mcp-client-matrix";
const CLIENT_VERSION: &str = "0.1.0";
/// How long `RunningService::close` may take: the child-process transport's own shutdown waits
/// up to 3 s + 3 s before it kills the server.
const CLOSE_WAIT: Duration = Duration::from_millis(7000);

type BoxError = Box<dyn Error + Send + Sync>;
type Client = RunningService<RoleClient, ClientConfig>;

/// One call of the cell (or its follow-up).
struct Call {
    name: String,
    arguments: Option<Map<String, Value>>,
    cancel_after_ms: Option<u64>,
}

/// The parts of the cell file the driver uses, checked.
struct Cell {
    transport: String,
    protocol: String,
    command: String,
    args: Vec<String>,
    env: HashMap<String, String>,
    url: String,
    calls: Vec<Call>,
    followup: Option<Call>,
    call_timeout: Duration,
    budget_ms: f64,
    list_tools: bool,
}

#[tokio::main]
async fn main() {
    let started = Instant::now();
    let (cell, obs_path) = parse_args();
    observe::init(
        obs_path,
        package_version("rmcp"),
        env!("MCPCM_RUSTC_VERSION"),
        cell.calls.iter().map(|call| call.name.clone()).collect(),
        cell.followup.as_ref().map(|call| call.name.clone()),
        started,
        cell.budget_ms,
    );
    oob::install();
    observe::start_watchdog(cell.budget_ms, started);
    tokio::spawn(on_signals());

    // The driver runs as a task so that a panic in it is caught here, not lost in the runtime.
    match tokio::spawn(drive(cell)).await {
        Ok(child_may_live) => observe::finish("finished", child_may_live),
        Err(error) => {
            eprintln!("rust-rmcp adapter: internal error: {error}");
            observe::crash(&format!("adapter internal error: {error}"))
        }
    }
}

/// SIGTERM / SIGINT: write what was gathered and exit 0, as observe.mjs does.
async fn on_signals() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return;
    };
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    observe::abort(&format!("received {name}"));
}

/// The steps of one session; returns whether the server child may still be running.
async fn drive(cell: Cell) -> bool {
    let init = observe::begin(Slot::Initialize, "initialize", Record::new());
    let client = match tokio::time::timeout(cell.call_timeout, connect(&cell)).await {
        Ok(Ok(client)) => {
            let version = client
                .peer_info()
                .map(|info| info.protocol_version.as_str().to_owned());
            observe::settle(
                init,
                record(json!({"status": "ok", "error": null, "protocol_version": version})),
            );
            client
        }
        Ok(Err(error)) => {
            observe::settle(init, raised(error_record(&*error)));
            return true;
        }
        Err(elapsed) => {
            observe::settle(init, raised(error_record(&elapsed)));
            return true;
        }
    };

    let peer = client.peer().clone();
    if cell.list_tools {
        let step = observe::begin(Slot::ListTools, "list_tools", Record::new());
        let patch = match tokio::time::timeout(cell.call_timeout, peer.list_tools(None)).await {
            Ok(Ok(listed)) => {
                let names: Vec<&str> = listed.tools.iter().map(|tool| tool.name.as_ref()).collect();
                record(json!({"status": "ok", "error": null, "tools": names}))
            }
            Ok(Err(error)) => raised(error_record(&error)),
            Err(elapsed) => raised(error_record(&elapsed)),
        };
        observe::settle(step, patch);
    }
    for (index, call) in cell.calls.iter().enumerate() {
        call_step(&peer, Slot::Call(index), call, cell.call_timeout).await;
    }
    if let Some(followup) = &cell.followup {
        call_step(&peer, Slot::Followup, followup, cell.call_timeout).await;
    }
    close_step(client).await
}

/// Connect and initialize: spawn (stdio) or reach (HTTP) the server through the SDK's transport.
async fn connect(cell: &Cell) -> Result<Client, BoxError> {
    let config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(CLIENT_NAME, CLIENT_VERSION),
    );
    let lifecycle = (cell.protocol == "2026-07-28").then(|| ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    });
    if cell.transport == "stdio" {
        let mut command = tokio::process::Command::new(&cell.command);
        command.args(&cell.args).envs(&cell.env);
        let transport = TokioChildProcess::new(command)?; // spawns the server now
        observe::set_child(transport.id());
        Ok(serve(config, transport, lifecycle).await?)
    } else {
        let transport = StreamableHttpClientTransport::from_uri(cell.url.as_str());
        Ok(serve(config, transport, lifecycle).await?)
    }
}

async fn serve<T, E, A>(
    config: ClientConfig,
    transport: T,
    lifecycle: Option<ClientLifecycleMode>,
) -> Result<Client, ClientInitializeError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: Error + Send + Sync + 'static,
{
    match lifecycle {
        None => config.serve(transport).await,
        Some(mode) => config.serve_with_lifecycle(transport, mode).await,
    }
}

/// One `tools/call` through `Peer::call_tool`, bounded by `call_timeout`; with `cancel_after_ms`,
/// cancelled by the application's `CancellationToken` (see the module documentation).
async fn call_step(peer: &Peer<RoleClient>, slot: Slot, call: &Call, call_timeout: Duration) {
    let step = observe::begin(slot, "call", record(json!({"tool": call.name})));
    let token = CancellationToken::new();
    let issued_at: Arc<OnceLock<f64>> = Arc::default();
    let timer = call.cancel_after_ms.map(|after| {
        let (token, issued_at, started) = (token.clone(), issued_at.clone(), step.started());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(after)).await;
            let _ = issued_at.set(observe::ms_since(started));
            token.cancel();
        })
    });

    let mut params = CallToolRequestParams::new(call.name.clone());
    if let Some(arguments) = &call.arguments {
        params = params.with_arguments(arguments.clone());
    }
    let outcome = tokio::select! {
        settled = tokio::time::timeout(call_timeout, peer.call_tool(params)) => Some(settled),
        () = token.cancelled() => None, // drops the call: the SDK sends notifications/cancelled
    };
    if let Some(timer) = timer {
        timer.abort();
    }

    let mut patch = match outcome {
        Some(Ok(Ok(result))) => match serde_json::to_value(&result) {
            Ok(result) => record(json!({"status": "returned", "result": result, "error": null})),
            Err(error) => raised(error_record(&error)),
        },
        Some(Ok(Err(error))) => raised(error_record(&error)),
        Some(Err(elapsed)) => raised(error_record(&elapsed)),
        None => {
            let after = call.cancel_after_ms.unwrap_or_default();
            raised(json!({
                "type": "Cancelled",
                "code": null,
                "message": format!(
                    "the adapter cancelled the call after {after} ms (CancellationToken; the call's future was \
                     dropped, on which rmcp sends notifications/cancelled); the client returned nothing of its own"
                ),
            }))
        }
    };
    if call.cancel_after_ms.is_some() {
        patch.insert("cancelled_after_ms".into(), json!(issued_at.get()));
    }
    observe::settle(step, patch);
}

/// `RunningService::close`, awaited at most [`CLOSE_WAIT`] and no later than 200 ms before the
/// watchdog; returns whether the server child may still be running. If it does not settle, the
/// close step stays pending (recorded `AdapterTimeout`) and the adapter finishes here.
async fn close_step(mut client: Client) -> bool {
    let step = observe::begin(Slot::Close, "close", Record::new());
    let wait = CLOSE_WAIT.min(observe::until_deadline().saturating_sub(Duration::from_millis(200)));
    match tokio::time::timeout(wait, client.close()).await {
        Ok(Ok(reason)) => {
            observe::settle(
                step,
                record(
                    json!({"status": "ok", "error": null, "quit_reason": format!("{reason:?}")}),
                ),
            );
            observe::child_gone(); // the transport's close waited for the server to exit
            false
        }
        Ok(Err(error)) => {
            observe::settle(step, raised(error_record(&error)));
            true
        }
        Err(_) => observe::finish(
            &format!("close wait bound of {} ms", wait.as_millis()),
            true,
        ),
    }
}

fn record(value: Value) -> Record {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("a step patch is a JSON object"),
    }
}

fn raised(error: Value) -> Record {
    let mut patch = Record::new();
    patch.insert("status".into(), json!("raised"));
    patch.insert("error".into(), error);
    patch
}

/// The contract's Error object for an error of the SDK's stack: `type`, `code` and `data` (of a
/// JSON-RPC error), `sdk_code` (an `io::ErrorKind`), `message` (its `Display`) and `chain` (its
/// causes, depth first, innermost last, at most `MAX_CHAIN`; see [`causes`]).
fn error_record(error: &(dyn Error + 'static)) -> Value {
    fn visit(error: &(dyn Error + 'static), chain: &mut Vec<Value>) {
        for cause in causes(error) {
            if chain.len() == observe::MAX_CHAIN {
                return;
            }
            chain.push(Value::Object(flat_error(cause)));
            visit(cause, chain);
        }
    }
    let mut record = flat_error(error);
    let mut chain = Vec::new();
    visit(error, &mut chain);
    if !chain.is_empty() {
        record.insert("chain".into(), Value::Array(chain));
    }
    Value::Object(record)
}

/// An error's causes: its `source()`, except where rmcp keeps them in fields that are not marked as
/// the source: `ClientInitializeError::TransportError` (the transport's error) and
/// `LegacyFallbackFailed` (both phases, like the members of an exception group).
fn causes<'a>(error: &'a (dyn Error + 'static)) -> Vec<&'a (dyn Error + 'static)> {
    match error.downcast_ref::<ClientInitializeError>() {
        Some(ClientInitializeError::TransportError { error, .. }) => vec![error],
        Some(ClientInitializeError::LegacyFallbackFailed { discover, fallback }) => {
            vec![&**discover, &**fallback]
        }
        _ => error.source().into_iter().collect(),
    }
}

fn flat_error(error: &(dyn Error + 'static)) -> Record {
    let (type_name, rpc, sdk_code) = describe(error);
    let mut record = record(json!({
        "type": type_name,
        "code": rpc.map(|data| data.code.0),
        "message": error.to_string(),
    }));
    if let Some(sdk_code) = sdk_code {
        record.insert("sdk_code".into(), json!(sdk_code));
    }
    if let Some(data) = rpc
        .and_then(|rpc| rpc.data.clone())
        .filter(|data| !data.is_null())
    {
        record.insert("data".into(), data);
    }
    record
}

/// The error's type as Rust names it (`ServiceError::McpError` for an enum's variant), the
/// JSON-RPC error it carries, and an `io::ErrorKind`. A `dyn Error` has no type name at run time:
/// the types the SDK's stack produces are tried in turn; anything else is named by its `Debug`.
fn describe<'a>(
    error: &'a (dyn Error + 'static),
) -> (String, Option<&'a ErrorData>, Option<String>) {
    if let Some(e) = error.downcast_ref::<ServiceError>() {
        let rpc = match e {
            ServiceError::McpError(data) => Some(data),
            _ => None,
        };
        return (variant("ServiceError", e), rpc, None);
    }
    if let Some(e) = error.downcast_ref::<ClientInitializeError>() {
        let rpc = match e {
            ClientInitializeError::JsonRpcError(data) => Some(data),
            _ => None,
        };
        return (variant("ClientInitializeError", e), rpc, None);
    }
    if let Some(e) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        let rpc = match e {
            StreamableHttpError::ReinitializationFailed(data) => Some(data),
            _ => None,
        };
        return (variant("StreamableHttpError", e), rpc, None);
    }
    if let Some(e) = error.downcast_ref::<ErrorData>() {
        return ("ErrorData".into(), Some(e), None);
    }
    if let Some(e) = error.downcast_ref::<std::io::Error>() {
        return ("io::Error".into(), None, Some(format!("{:?}", e.kind())));
    }
    let name = if let Some(e) = error.downcast_ref::<SseError>() {
        variant("SseError", e)
    } else if error.is::<DynamicTransportError>() {
        "DynamicTransportError".into()
    } else if error.is::<HttpStatusError>() {
        "HttpStatusError".into()
    } else if error.is::<reqwest::Error>() {
        "reqwest::Error".into()
    } else if error.is::<serde_json::Error>() {
        "serde_json::Error".into()
    } else if error.is::<tokio::time::error::Elapsed>() {
        "Elapsed".into()
    } else if error.is::<tokio::task::JoinError>() {
        "JoinError".into()
    } else {
        Some(debug_head(error))
            .filter(|head| !head.is_empty())
            .unwrap_or_else(|| "Error".into())
    };
    (name, None, None)
}

/// `Type::Variant` for an enum whose `Debug` starts with its variant's name.
fn variant(type_name: &str, value: &dyn fmt::Debug) -> String {
    match debug_head(value) {
        head if head.is_empty() || head == type_name => type_name.to_owned(),
        head => format!("{type_name}::{head}"),
    }
}

/// The leading identifier of `value`'s `Debug` text (a derived `Debug` starts with the variant or
/// struct name), without formatting the rest of it (a result in an error can be megabytes).
fn debug_head(value: &dyn fmt::Debug) -> String {
    struct Head(String);
    impl fmt::Write for Head {
        fn write_str(&mut self, text: &str) -> fmt::Result {
            for c in text.chars() {
                if !(c.is_alphanumeric() || c == '_') {
                    return Err(fmt::Error);
                }
                self.0.push(c);
            }
            Ok(())
        }
    }
    let mut head = Head(String::new());
    let _ = fmt::write(&mut head, format_args!("{value:?}"));
    head.0
}

/// The version of `package` in `Cargo.lock` in the working directory (the adapter directory).
fn package_version(package: &str) -> Option<String> {
    let lock = std::fs::read_to_string("Cargo.lock").ok()?;
    let name_line = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == name_line {
            let version = lines
                .next()?
                .trim()
                .strip_prefix("version = \"")?
                .strip_suffix('"')?;
            return Some(version.to_owned());
        }
    }
    None
}

/// The command line and the cell file, checked as observe.mjs `adapterArgs` does; any problem
/// exits 2 with one line on stderr.
fn parse_args() -> (Cell, PathBuf) {
    let args: Vec<String> = std::env::args().collect();
    let [_, cell_path, obs_path] = args.as_slice() else {
        observe::fail("usage: adapter <cell.json> <observation.json>");
    };
    let cell = observe::read_cell(cell_path).unwrap_or_else(|problem| observe::fail(&problem));
    let problems = observe::option_problems(&cell["options"], KNOWN_OPTIONS);
    if !problems.is_empty() {
        observe::fail(&problems.join("; "));
    }
    (
        parse_cell(&cell).unwrap_or_else(|problem| observe::fail(&problem)),
        PathBuf::from(obs_path),
    )
}

fn parse_cell(cell: &Record) -> Result<Cell, String> {
    let transport = cell
        .get("transport")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !TRANSPORTS.contains(&transport.as_str()) {
        return Err(format!(
            "transport {} is not supported ({})",
            json!(cell.get("transport")),
            TRANSPORTS.join(", ")
        ));
    }
    let server = &cell["server"];
    let text = |value: &Value| value.as_str().map(str::to_owned);
    let (mut command, mut args, mut env, mut url) =
        (String::new(), Vec::new(), HashMap::new(), String::new());
    if transport == "stdio" {
        command = text(&server["command"]).ok_or("transport stdio needs server.command")?;
        for arg in server["args"].as_array().into_iter().flatten() {
            args.push(text(arg).ok_or("server.args: expected strings")?);
        }
        for (key, value) in server["env"].as_object().into_iter().flatten() {
            env.insert(
                key.clone(),
                text(value).ok_or("server.env: expected string values")?,
            );
        }
    } else {
        url = text(&server["url"])
            .ok_or_else(|| format!("transport {transport} needs server.url"))?;
    }

    let calls = cell["calls"].as_array().ok_or("calls: expected a list")?;
    observe::check_cancel_after(calls)?;
    let calls = calls
        .iter()
        .map(parse_call)
        .collect::<Result<Vec<_>, _>>()?;
    let followup = match &cell["followup"] {
        Value::Null => None,
        followup => Some(parse_call(followup)?),
    };
    let call_timeout_ms = cell["call_timeout_ms"]
        .as_f64()
        .ok_or("call_timeout_ms: expected a number")?;
    let budget_ms = cell["budget_ms"]
        .as_f64()
        .ok_or("budget_ms: expected a number")?;
    Ok(Cell {
        protocol: cell
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or("2025-11-25")
            .to_owned(),
        transport,
        command,
        args,
        env,
        url,
        calls,
        followup,
        call_timeout: Duration::from_secs_f64(call_timeout_ms.max(0.0) / 1000.0),
        budget_ms,
        list_tools: cell["options"]
            .get("list_tools")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

fn parse_call(call: &Value) -> Result<Call, String> {
    let name = call["name"]
        .as_str()
        .ok_or_else(|| format!("a call needs a name: {call}"))?;
    let arguments = match &call["arguments"] {
        Value::Null => None,
        Value::Object(arguments) => Some(arguments.clone()),
        other => {
            return Err(format!(
                "call {name}: arguments: expected an object, got {other}"
            ));
        }
    };
    Ok(Call {
        name: name.to_owned(),
        arguments,
        cancel_after_ms: call["cancel_after_ms"].as_u64(),
    })
}
