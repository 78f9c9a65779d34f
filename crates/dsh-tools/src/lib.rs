//! The tools dsh offers a model.
//!
//! A [`Tool`] declares its argument schema ([`Parameters`]) and runs with validated
//! [`Arguments`]; the [`ToolRegistry`] is what the agent loop talks to: it lists the schemas sent
//! to the model, decides which calls may run in parallel, and turns every call, however
//! malformed, into a [`ToolOutcome`] the model can read. A tool error is text for the model
//! (`Error: ...`) plus, where the reference gives one, a structured [`ErrorInfo`]; it is never a
//! crash.
//!
//! Model-facing texts (envelopes, footers, error messages) match the reference harness byte for
//! byte; descriptions are our own.

mod error;
mod path;
mod read;
mod registry;
mod schema;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use dsh_protocol::ToolOutputPart;
use tokio_util::sync::CancellationToken;

pub use error::{ToolError, fs_code};
pub use path::{Target, resolve};
pub use read::Read;
pub use registry::{ToolOutcome, ToolRegistry};
pub use schema::{Arguments, Param, ParamType, Parameters};

pub use dsh_protocol::ErrorInfo;

/// What a tool runs against.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session workspace: relative paths resolve against it.
    pub cwd: PathBuf,
    /// Fired when the run is stopped; long tools stop early and report it.
    pub cancel: CancellationToken,
}

/// A successful tool result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub parts: Vec<ToolOutputPart>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            parts: vec![ToolOutputPart::Text { text: text.into() }],
        }
    }
}

/// The future a tool call returns.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &'static str;

    /// What the model is told the tool does.
    fn description(&self) -> &str;

    /// The arguments it takes.
    fn parameters(&self) -> &Parameters;

    /// Advice for the system prompt on when and how to use the tool, if any.
    fn guidance(&self) -> Option<&str> {
        None
    }

    /// Whether calls may run alongside other parallel-safe calls (they neither change state nor
    /// depend on the order of other calls). Exclusive by default.
    fn parallel_safe(&self) -> bool {
        false
    }

    /// Runs one call with arguments already validated against [`Tool::parameters`].
    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a>;
}
