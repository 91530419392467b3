//! The contract-shaped pieces of docs/adapters.md that do not depend on the SDK, the Rust twin of
//! `clients/_support/observe.mjs` (`readCell`, `checkOptions`, `checkCancelAfter`, `createRun`,
//! `writeObservation`) with the same messages:
//!
//! - [`read_cell`], [`option_problems`], [`check_cancel_after`]: the cell file; a problem stops the
//!   adapter with status 2 and one line on stderr ([`fail`]).
//! - [`Run`], reached through [`begin`] / [`settle`] / [`report_error`] / [`finish`]: the
//!   observation, complete at every moment. A step is entered "pending" (raised, `AdapterTimeout`)
//!   before it is awaited and overwritten when it settles, so whatever stops the adapter (the
//!   budget watchdog, a signal, a panic) writes the facts gathered so far and names the step that
//!   had not settled; after a successful initialize, the calls and follow-up never started are
//!   raised `AdapterTimeout` "not started".
//! - [`start_watchdog`]: an OS thread that, at the budget minus 5 % (0.5 to 2 s) from process
//!   start, kills the server child, writes the observation and exits 0, whatever the async runtime
//!   is doing.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

pub const CONTRACT: u64 = 1;
/// How many causes an Error's `chain` holds at most.
pub const MAX_CHAIN: usize = 10;
/// How many out-of-band errors an observation keeps; further reports are only counted.
pub const MAX_TRANSPORT_ERRORS: usize = 1000;
/// The keys a cell file must have (every runtime checks the same ones).
const CELL_KEYS: [&str; 7] = [
    "cell_id",
    "options",
    "server",
    "calls",
    "followup",
    "call_timeout_ms",
    "budget_ms",
];

pub type Record = Map<String, Value>;

/// Stop the adapter: a bad command line, cell file or option (not a client fact).
pub fn fail(message: &str) -> ! {
    eprintln!("rust-rmcp adapter: {message}");
    std::process::exit(2)
}

/// `value` as compact JSON text, for messages (`null` for a missing value).
fn json_text(value: Option<&Value>) -> String {
    value.map_or_else(|| "null".to_owned(), Value::to_string)
}

/// Read and minimally check a cell file (observe.mjs `readCell` / `cellProblem`).
pub fn read_cell(file: &str) -> Result<Record, String> {
    let text =
        fs::read_to_string(file).map_err(|e| format!("cannot read cell file {file}: {e}"))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("cannot read cell file {file}: {e}"))?;
    let Value::Object(cell) = value else {
        return Err(format!("{file}: the cell is not a JSON object"));
    };
    if cell.get("contract").and_then(Value::as_u64) != Some(CONTRACT) {
        return Err(format!(
            "{file}: contract {} is not supported (expected {CONTRACT})",
            json_text(cell.get("contract"))
        ));
    }
    let missing: Vec<&str> = CELL_KEYS
        .into_iter()
        .filter(|key| !cell.contains_key(*key))
        .collect();
    if !missing.is_empty() {
        return Err(format!("{file}: missing key(s): {}", missing.join(", ")));
    }
    Ok(cell)
}

/// What is wrong with the cell's `options` for an adapter that understands `known` (name, type:
/// "boolean" | "integer" | "number" | "string"), as observe.mjs `optionProblems` says it; in key
/// order (serde_json's map is sorted here: its `preserve_order` feature would reorder rmcp's
/// results too).
pub fn option_problems(options: &Value, known: &[(&str, &str)]) -> Vec<String> {
    let Value::Object(options) = options else {
        return vec![format!(
            "options: expected an object, got {}",
            json_text(Some(options))
        )];
    };
    let mut names: Vec<&str> = known.iter().map(|(name, _)| *name).collect();
    names.sort_unstable();
    let mut problems = Vec::new();
    for (key, value) in options {
        let Some((_, want)) = known.iter().find(|(name, _)| name == key) else {
            let understood = if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            };
            problems.push(format!(
                "unknown option {} (this adapter understands: {understood})",
                json!(key)
            ));
            continue;
        };
        let ok = match *want {
            "boolean" => value.is_boolean(),
            "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
            "number" => value.is_number(),
            _ => value.is_string(),
        };
        if !ok {
            problems.push(format!(
                "option {}: expected {want}, got {value}",
                json!(key)
            ));
        }
    }
    problems
}

/// Refuse a call whose `cancel_after_ms` is set but not a non-negative integer.
pub fn check_cancel_after(calls: &[Value]) -> Result<(), String> {
    for call in calls {
        match call.get("cancel_after_ms") {
            None | Some(Value::Null) => {}
            Some(after) if after.as_u64().is_some() => {}
            Some(after) => {
                return Err(format!(
                    "cancel_after_ms: expected a non-negative integer, got {after}"
                ));
            }
        }
    }
    Ok(())
}

/// Milliseconds since `since`, at 0.1 ms resolution (observe.mjs `startTimer`).
pub fn ms_since(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 10_000.0).round() / 10.0
}

/// The Error recorded for a step that the adapter's own deadline ended (`elapsed_ms`) or never
/// let start (`None`); `reason`: what stopped the adapter (observe.mjs `deadlineError`).
pub fn deadline_error(what: &str, elapsed_ms: Option<f64>, reason: Option<&str>) -> Value {
    let mut message = match elapsed_ms {
        None => format!("adapter deadline: {what} not started, the adapter's deadline had passed"),
        Some(ms) => format!("adapter deadline: {what} ended by the adapter after {ms} ms"),
    };
    if let Some(reason) = reason {
        message = format!("{message} ({reason})");
    }
    json!({"type": "AdapterTimeout", "code": null, "message": message})
}

/// Where a step's record lives in the observation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Slot {
    Initialize,
    ListTools,
    Call(usize),
    Followup,
    Close,
}

/// A step that has begun: settle it with [`settle`].
pub struct Step {
    slot: Slot,
    started: Instant,
}

impl Step {
    pub fn started(&self) -> Instant {
        self.started
    }

    pub fn elapsed_ms(&self) -> f64 {
        ms_since(self.started)
    }
}

struct Pending {
    slot: Slot,
    what: String,
    started: Instant,
}

/// The observation of one run and what is needed to complete it at any moment.
pub struct Run {
    obs_path: PathBuf,
    package_version: Option<String>,
    runtime_version: String,
    /// The tool names of the cell's calls and follow-up (for the never-started ones).
    call_names: Vec<String>,
    followup_name: Option<String>,
    initialize: Option<Record>,
    list_tools: Option<Record>,
    calls: Vec<Option<Record>>,
    followup: Option<Record>,
    close: Option<Record>,
    transport_errors: Vec<Value>,
    dropped_errors: usize,
    /// The steps run one after the other: at most one is pending.
    pending: Option<Pending>,
    written: bool,
    /// The stdio server child, killed when the adapter stops waiting for it.
    child_pid: Option<u32>,
    /// When the watchdog fires.
    deadline: Instant,
}

static RUN: OnceLock<Mutex<Run>> = OnceLock::new();

fn run() -> MutexGuard<'static, Run> {
    let lock = RUN.get().expect("observe::init was not called");
    lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Set up the run (once, before anything is recorded).
pub fn init(
    obs_path: PathBuf,
    package_version: Option<String>,
    runtime_version: &str,
    call_names: Vec<String>,
    followup_name: Option<String>,
    started: Instant,
    budget_ms: f64,
) {
    // The same margin as observe.mjs: 5 % of the budget, at least 0.5 s, at most 2 s.
    let margin = (budget_ms * 0.05).clamp(500.0, 2000.0);
    let deadline = started + Duration::from_secs_f64((budget_ms - margin).max(0.0) / 1000.0);
    let state = Run {
        obs_path,
        package_version,
        runtime_version: runtime_version.to_owned(),
        call_names,
        followup_name,
        initialize: None,
        list_tools: None,
        calls: Vec::new(),
        followup: None,
        close: None,
        transport_errors: Vec::new(),
        dropped_errors: 0,
        pending: None,
        written: false,
        child_pid: None,
        deadline,
    };
    assert!(
        RUN.set(Mutex::new(state)).is_ok(),
        "observe::init called twice"
    );
}

/// Start the budget watchdog thread (see the module documentation).
pub fn start_watchdog(budget_ms: f64, started: Instant) {
    let deadline = run().deadline;
    let at_ms = (deadline - started).as_millis();
    std::thread::spawn(move || {
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        abort(&format!("budget watchdog at {at_ms} ms of {budget_ms} ms"));
    });
}

/// Remember the stdio server child's pid, to kill it if the adapter stops waiting for it.
pub fn set_child(pid: Option<u32>) {
    run().child_pid = pid;
}

/// The stdio server child has exited (the SDK's close reaped it): nothing to kill any more.
pub fn child_gone() {
    run().child_pid = None;
}

/// SIGKILL the server child if it is still there.
fn kill_child(state: &mut Run) {
    if let Some(pid) = state.child_pid.take() {
        let pid = pid as libc::pid_t;
        // SAFETY: kill(2) with a pid we spawned; signal 0 only checks that it exists.
        unsafe {
            if libc::kill(pid, 0) == 0 {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Time left before the watchdog fires.
pub fn until_deadline() -> Duration {
    run().deadline.saturating_duration_since(Instant::now())
}

/// Enter a pending step: its record (`fields` plus the step's defaults) goes into the observation
/// now, recorded as raised until [`settle`] overwrites it.
pub fn begin(slot: Slot, what: &str, fields: Record) -> Step {
    let mut record = fields;
    record.insert("status".into(), json!("raised"));
    if record.contains_key("tool") {
        record.insert("result".into(), Value::Null);
    }
    record.insert("error".into(), Value::Null);
    match slot {
        Slot::Initialize => {
            record.insert("protocol_version".into(), Value::Null);
        }
        Slot::ListTools => {
            record.insert("tools".into(), Value::Null);
        }
        _ => {}
    }
    record.insert("duration_ms".into(), json!(0));
    let started = Instant::now();
    let mut state = run();
    *state.slot_mut(slot) = Some(record);
    state.pending = Some(Pending {
        slot,
        what: what.to_owned(),
        started,
    });
    Step { slot, started }
}

/// Settle a pending step with `patch` (status, result / error, ...) and its duration.
pub fn settle(step: Step, patch: Record) {
    let duration = step.elapsed_ms();
    let mut state = run();
    if state.written {
        return; // the watchdog already wrote this step as pending
    }
    if state
        .pending
        .as_ref()
        .is_some_and(|pending| pending.slot == step.slot)
    {
        state.pending = None;
    }
    if let Some(record) = state.slot_mut(step.slot) {
        record.extend(patch);
        record.insert("duration_ms".into(), json!(duration));
    }
}

/// Record an out-of-band error; past [`MAX_TRANSPORT_ERRORS`] further reports are only counted.
pub fn report_error(error: Value) {
    if RUN.get().is_some() {
        push_error(&mut run(), error);
    }
}

/// [`report_error`] from a panic hook, which must not deadlock on a lock its own thread holds:
/// it waits at most 100 ms for the lock, then gives up.
pub fn report_error_from_panic(error: Value) {
    let Some(lock) = RUN.get() else { return };
    for _ in 0..100 {
        match lock.try_lock() {
            Ok(mut state) => return push_error(&mut state, error),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => {
                return push_error(&mut poisoned.into_inner(), error);
            }
            Err(std::sync::TryLockError::WouldBlock) => {
                std::thread::sleep(Duration::from_millis(1))
            }
        }
    }
}

fn push_error(state: &mut Run, error: Value) {
    if state.transport_errors.len() >= MAX_TRANSPORT_ERRORS {
        state.dropped_errors += 1;
    } else {
        state.transport_errors.push(error);
    }
}

impl Run {
    fn slot_mut(&mut self, slot: Slot) -> &mut Option<Record> {
        match slot {
            Slot::Initialize => &mut self.initialize,
            Slot::ListTools => &mut self.list_tools,
            Slot::Followup => &mut self.followup,
            Slot::Close => &mut self.close,
            Slot::Call(index) => {
                // Calls are begun in order, each once.
                while self.calls.len() <= index {
                    self.calls.push(None);
                }
                &mut self.calls[index]
            }
        }
    }

    /// The observation as written: the pending step (if any) raised `AdapterTimeout` with
    /// `reason`, never-started steps completed as observe.mjs `completeSteps` does.
    fn complete(&mut self, reason: &str) -> Value {
        if let Some(pending) = self.pending.take() {
            let elapsed = ms_since(pending.started);
            if let Some(record) = self.slot_mut(pending.slot) {
                let what = match record.get("tool").and_then(Value::as_str) {
                    Some(tool) => format!("{} {tool}", pending.what),
                    None => pending.what.clone(),
                };
                record.insert("status".into(), json!("raised"));
                record.insert("duration_ms".into(), json!(elapsed));
                record.insert(
                    "error".into(),
                    deadline_error(&what, Some(elapsed), Some(reason)),
                );
            }
        }
        let not_started = |kind: &str, tool: &str| {
            json!({"tool": tool, "status": "raised", "result": null,
                   "error": deadline_error(&format!("{kind} {tool}"), None, None), "duration_ms": 0})
        };
        let initialize = self
            .initialize
            .clone()
            .map(Value::Object)
            .unwrap_or_else(|| {
                json!({"status": "raised", "error": deadline_error("initialize", None, None),
                   "protocol_version": null, "duration_ms": 0})
            });
        let connected = initialize["status"] == "ok";
        let (calls, followup) = if connected {
            let mut calls: Vec<Value> = self
                .calls
                .iter()
                .flatten()
                .cloned()
                .map(Value::Object)
                .collect();
            for name in self.call_names.iter().skip(calls.len()) {
                calls.push(not_started("call", name));
            }
            let followup = match (&self.followup, &self.followup_name) {
                (Some(record), _) => Value::Object(record.clone()),
                (None, Some(name)) => not_started("followup", name),
                (None, None) => Value::Null,
            };
            (calls, followup)
        } else {
            (Vec::new(), Value::Null)
        };
        let mut transport_errors = self.transport_errors.clone();
        if self.dropped_errors > 0 {
            transport_errors.push(json!({"type": "AdapterTruncated", "code": null,
                "message": format!("{} further out-of-band error reports were not recorded", self.dropped_errors)}));
        }
        json!({
            "contract": CONTRACT,
            "package_version": self.package_version,
            "runtime_version": self.runtime_version,
            "initialize": initialize,
            "list_tools": self.list_tools.clone().map(Value::Object),
            "calls": calls,
            "followup": followup,
            "transport_errors": transport_errors,
            "close": self.close.clone().map(Value::Object),
        })
    }

    /// Write the observation once (later calls do nothing).
    fn write(&mut self, reason: &str) {
        if self.written {
            return;
        }
        self.written = true;
        let observation = self.complete(reason);
        if let Err(error) = write_observation(&self.obs_path, &observation) {
            eprintln!("rust-rmcp adapter: cannot write the observation: {error}");
        }
    }
}

/// Write `observation` as JSON (UTF-8, non-ASCII as is) to `file` atomically: a temporary file in
/// the same directory, fsync, then rename into place, so a killed adapter never leaves half of it.
pub fn write_observation(file: &Path, observation: &Value) -> std::io::Result<()> {
    let dir = file
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".observation-{}.tmp", std::process::id()));
    let written = (|| {
        let mut out = std::io::BufWriter::new(fs::File::create(&tmp)?);
        serde_json::to_writer(&mut out, observation)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        fs::rename(&tmp, file)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Write the observation and exit 0: the normal end. `kill`: the server child may still be there
/// (the SDK's close did not finish, or never ran).
pub fn finish(reason: &str, kill: bool) -> ! {
    let mut state = run();
    if kill {
        kill_child(&mut state);
    }
    state.write(reason);
    std::process::exit(0)
}

/// Stop waiting (watchdog, signal): kill the server child, write, exit 0.
pub fn abort(reason: &str) -> ! {
    finish(reason, true)
}

/// The adapter itself failed (a panic in its own code): write what was gathered, exit 1.
pub fn crash(reason: &str) -> ! {
    let mut state = run();
    kill_child(&mut state);
    state.write(reason);
    std::process::exit(1)
}
