//! Out-of-band errors: what the SDK reports outside the result of a call.
//!
//! rmcp has no error callback; it reports trouble it does not return to a caller through the
//! `tracing` crate (`tracing::error!` / `tracing::warn!`: a stdio line longer than its maximum
//! line length, a worker that quit, an SSE stream error, a response nobody waited for, ...).
//! [`install`] sets a global `tracing` subscriber that records every WARN and ERROR event whose
//! target is inside `rmcp` as a `transport_errors` entry (`type`: the event's target, the module
//! that reported it; `message`: its message and fields; `level`) and echoes it on stderr. Lower
//! levels are not errors by the SDK's own account (rmcp logs a stdio line that is not JSON at
//! DEBUG, "Ignoring unparsable incoming message") and are not recorded.
//!
//! A panic anywhere (an SDK task's is caught by tokio and does not end the process) is recorded
//! the same way, with `type` "panic", after Rust's default hook has printed it.

use std::fmt::{self, Write as _};

use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::{Event, Level, Metadata, Subscriber, span};

use crate::observe;

/// A `tracing` subscriber that keeps rmcp's WARN and ERROR events (see the module docs).
struct SdkErrors;

impl Subscriber for SdkErrors {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        // tracing orders levels by verbosity: ERROR < WARN < INFO < DEBUG < TRACE.
        metadata.is_event()
            && *metadata.level() <= Level::WARN
            && metadata.target().starts_with("rmcp")
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::WARN)
    }

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let metadata = event.metadata();
        let message = if fields.rest.is_empty() {
            fields.message
        } else {
            format!("{} ({})", fields.message, fields.rest.join(", "))
        };
        eprintln!(
            "rust-rmcp adapter: rmcp {} {}: {message}",
            metadata.level(),
            metadata.target()
        );
        observe::report_error(json!({
            "type": metadata.target(),
            "code": null,
            "message": message,
            "level": metadata.level().as_str(),
        }));
    }

    // Spans are never enabled (`enabled` takes events only); these are required but unused.
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

/// An event's `message` and its other fields as `name=value`.
#[derive(Default)]
struct Fields {
    message: String,
    rest: Vec<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.rest.push(format!("{}={value}", field.name()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.rest.push(format!("{}={value:?}", field.name()));
        }
    }
}

/// Install the subscriber and the panic hook (before the SDK runs).
pub fn install() {
    if tracing::subscriber::set_global_default(SdkErrors).is_err() {
        eprintln!(
            "rust-rmcp adapter: a tracing subscriber was already set; SDK log events are not recorded"
        );
    }
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "Box<dyn Any>".to_owned());
        let location = info
            .location()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        let thread = std::thread::current()
            .name()
            .unwrap_or("<unnamed>")
            .to_owned();
        observe::report_error_from_panic(json!({
            "type": "panic",
            "code": null,
            "message": format!("thread '{thread}' panicked{location}: {payload}"),
        }));
    }));
}
