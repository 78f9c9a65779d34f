use std::path::{Path, PathBuf};

use dsh_protocol::{Message, Record, RecordEnvelope, SessionHeader};

use crate::CoreError;
use crate::log::{SessionLog, now_ms};

/// One conversation: its identity, the history the model sees, and the log it is kept in.
pub struct Session {
    id: String,
    cwd: PathBuf,
    history: Vec<Message>,
    log: SessionLog,
    last_turn: u32,
}

impl Session {
    /// A new session with a fresh `session-<uuid>` id, logged under `home`.
    pub fn create(home: &Path, cwd: PathBuf) -> Self {
        let id = format!("session-{}", uuid::Uuid::new_v4());
        let header = SessionHeader::new(id.clone(), now_ms(), cwd.to_string_lossy().into_owned());
        Session {
            log: SessionLog::create(home, header),
            id,
            cwd,
            history: Vec::new(),
            last_turn: 0,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    pub fn history(&self) -> &[Message] {
        &self.history
    }

    pub fn log_path(&self) -> &Path {
        self.log.path()
    }

    /// The session's folder: its log and its spill files.
    pub fn dir(&self) -> &Path {
        self.log.path().parent().unwrap_or_else(|| Path::new("."))
    }

    pub(crate) fn next_turn(&mut self) -> u32 {
        self.last_turn += 1;
        self.last_turn
    }

    /// Commits a record: the log first, then the history the model will see.
    pub(crate) fn commit(&mut self, record: Record) -> Result<RecordEnvelope, CoreError> {
        let envelope = self.log.append(record)?;
        match &envelope.record {
            Record::UserMessage { message, .. } => self.history.push(message.clone()),
            Record::AssistantMessage(data) => self.history.push(data.message.clone()),
            Record::ToolResult(data) => self.history.push(data.message.clone()),
            Record::TurnStart { .. }
            | Record::StepStart { .. }
            | Record::ToolCall(_)
            | Record::StepEnd { .. }
            | Record::TurnEnd { .. } => {}
        }
        Ok(envelope)
    }
}
