//! The shared vocabulary of dsh.
//!
//! Every other crate speaks these types: the conversation ([`Message`], [`Block`]), what a
//! request cost ([`Usage`]), how a turn ended ([`TurnEndReason`], [`Failure`]), the records a
//! session log holds ([`Record`]) and the events a supervisor reads from `--json`
//! ([`StreamEvent`]). The JSON shapes are the contract: field names, tags and nesting follow the
//! reference harness wherever a program parses them, so keep them stable and add, never rename.
//! How each record shows is its [`View`] ([`Record::view`]), which every front end renders.
//! Beside them, [`address`]: the one judgement of whether an address is this machine, and the
//! one way a URL is shown to a person.

pub mod address;
mod failure;
mod message;
mod record;
pub mod stream;
mod usage;
pub mod view;

pub use address::shown_url;
pub use failure::{ErrorInfo, Failure, FailureCode};
pub use message::{Block, ImageRef, Message, Role, ToolOutputPart, ToolSpec};
pub use record::{
    AbortReason, AssistantMessageRecord, AutoReviewRecord, BlockedReason, CheckpointAt,
    CheckpointRecord, CommandOutcome, CompactionPruneRecord, CompactionSummaryRecord, FinishReason,
    Goal, GoalChangeRecord, GoalOperation, GoalPhase, HeaderKind, InstructionFile,
    PermissionRecord, Presentation, Record, RecordEnvelope, ReviewDecision, RewindRecord,
    SESSION_FORMAT_VERSION, SessionHeader, SessionSummary, SessionTitleRecord, SubagentRunRecord,
    TodoItem, TodoStatus, ToolCallRecord, ToolResultRecord, TurnEndReason,
};
pub use stream::StreamEvent;
pub use usage::{OffPeak, PeakHours, Prices, Usage};
pub use view::{Card, CardKind, Hidden, Tone, View};
