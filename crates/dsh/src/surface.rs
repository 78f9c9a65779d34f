//! How a run is shown: plain text (the answer on stdout, live reasoning on stderr) or the
//! `--json` event stream. Write errors are ignored: a supervisor that stopped reading must not
//! stop the run, whose log is on disk either way.

use std::io::Write;

use dsh_core::StreamDelta;
use dsh_core::{AgentEvent, TurnSummary};
use dsh_protocol::stream::{bound_line, project};
use dsh_protocol::{StreamEvent, Tone, View};

/// The heading of a live reasoning section on stderr.
const REASONING_HEADING: &str = "dsh: reasoning:\n";

pub enum Surface {
    Text(TextSurface),
    Json {
        /// When the run began, for `final.durationMs`.
        started: std::time::Instant,
    },
}

#[derive(Default)]
pub struct TextSurface {
    /// A reasoning section is open on stderr.
    reasoning: bool,
    /// The last byte written to that section was a newline.
    at_line_start: bool,
}

impl TextSurface {
    fn reasoning(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        if !self.reasoning {
            let _ = err.write_all(REASONING_HEADING.as_bytes());
            self.reasoning = true;
        }
        let _ = err.write_all(text.as_bytes());
        self.at_line_start = text.ends_with('\n');
    }

    /// Ends an open reasoning section so that what follows starts on its own line.
    fn close(&mut self) {
        if self.reasoning && !self.at_line_start {
            let _ = std::io::stderr().write_all(b"\n");
        }
        self.reasoning = false;
    }
}

impl Surface {
    pub fn new(json: bool) -> Self {
        if json {
            Surface::Json {
                started: std::time::Instant::now(),
            }
        } else {
            Surface::Text(TextSurface::default())
        }
    }

    /// A new run of the same stream begins (a stream-json message): `final.durationMs`
    /// counts from here.
    pub fn begin_run(&mut self) {
        if let Surface::Json { started } = self {
            *started = std::time::Instant::now();
        }
    }

    /// The opening event of a run.
    pub fn session(&mut self, session_id: &str, cwd: &str) {
        if let Surface::Json { .. } = self {
            line(&StreamEvent::Session {
                session_id: session_id.to_owned(),
                cwd: cwd.to_owned(),
                schema_version: dsh_protocol::stream::STREAM_SCHEMA_VERSION,
            });
        }
    }

    /// The task list a resumed session starts from, so a supervisor need not read the log.
    pub fn todos(&mut self, todos: &[dsh_protocol::TodoItem]) {
        if let Surface::Json { .. } = self
            && !todos.is_empty()
        {
            line(&StreamEvent::Todo {
                todos: todos.to_vec(),
            });
        }
    }

    /// A resumed session's goal, as its last change left it.
    pub fn goal(&mut self, change: Option<&dsh_protocol::GoalChangeRecord>) {
        if let (Surface::Json { .. }, Some(change)) = (&self, change) {
            line(&StreamEvent::Goal {
                operation: change.operation,
                goal: change.goal.clone(),
            });
        }
    }

    pub fn event(&mut self, event: &AgentEvent) {
        if let AgentEvent::Delta(StreamDelta::Retry(notice)) = event {
            if let Surface::Text(text) = self {
                text.close();
            }
            // Not `dsh: <CODE>: ...`: supervisors read that line as the run's failure.
            let _ = writeln!(
                std::io::stderr(),
                "dsh: retrying (attempt {} of {}) in {:.1} s after {}: {}",
                notice.attempt,
                notice.attempts,
                notice.delay.as_secs_f64(),
                notice.code,
                notice.message
            );
            return;
        }
        match (self, event) {
            (Surface::Json { .. }, AgentEvent::Record(record)) => {
                for event in project(record) {
                    line(&event);
                }
            }
            (Surface::Json { .. }, AgentEvent::Child { .. }) => {
                let (agent_id, record) = innermost(event);
                if let Some(record) = record {
                    for event in project(record) {
                        line(&StreamEvent::Agent {
                            agent_id: agent_id.clone(),
                            event: Box::new(event),
                        });
                    }
                }
            }
            (Surface::Json { .. }, AgentEvent::Delta(_)) => {}
            // Live output is for a person watching; the result carries it.
            (_, AgentEvent::ToolOutput { .. }) => {}
            (surface, AgentEvent::Notice(line)) => {
                if let Surface::Text(text) = surface {
                    text.close();
                }
                notice(line);
            }
            // A subagent's work is in its own log and the result of the call that ran it.
            (Surface::Text(_), AgentEvent::Child { .. }) => {}
            (Surface::Text(text), AgentEvent::Delta(StreamDelta::Reasoning(delta))) => {
                text.reasoning(delta);
            }
            // What the model hands the user is for the person at the terminal, beside the
            // answer on stdout that a script may read; the rest of a run is in its log.
            (Surface::Text(text), AgentEvent::Record(record)) => {
                text.close();
                if let View::Card(card) = record.view()
                    && card.tone == Tone::Handed
                {
                    let _ = writeln!(std::io::stderr(), "dsh: presented {}", card.line());
                }
            }
            (Surface::Text(text), AgentEvent::Delta(_)) => text.close(),
        }
    }

    /// The end of a run that reached the agent: the answer, and the failure line if the turn
    /// failed.
    pub fn finish(
        &mut self,
        session_id: &str,
        summary: &TurnSummary,
        structured: Option<&serde_json::Value>,
    ) {
        match self {
            Surface::Json { started } => line(&StreamEvent::Final {
                session_id: session_id.to_owned(),
                reason: Some(summary.reason.clone()),
                text: summary.text.clone(),
                usage: summary.usage,
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                steps: summary.steps,
                structured_output: structured.cloned(),
            }),
            Surface::Text(text) => {
                text.close();
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(summary.text.as_bytes());
                let _ = out.write_all(b"\n");
                let _ = out.flush();
            }
        }
        if let Some((code, message)) = summary.reason.failure() {
            let _ = writeln!(std::io::stderr(), "dsh: {code}: {message}");
        }
    }

    /// A failure outside a turn: `dsh: <message>` on stderr and, in JSON mode, an `error`
    /// event (`event_message` is the message without decorations meant for a terminal).
    pub fn fail(&mut self, message: &str, event_message: &str, code: Option<String>) {
        if let Surface::Text(text) = self {
            text.close();
        }
        let _ = writeln!(std::io::stderr(), "dsh: {message}");
        if let Surface::Json { .. } = self {
            line(&StreamEvent::Error {
                message: event_message.to_owned(),
                code,
            });
        }
    }
}

impl Surface {
    /// [`Surface::fail`] for a failure that knows its code, with its hint on a line of its own.
    pub fn failed(&mut self, error: &dsh_core::SetupError) {
        let message = error.with_hint_line();
        self.fail(&message, &message, Some(error.code.to_string()));
    }
}

fn line(event: &StreamEvent) {
    let mut text = bound_line(event);
    text.push('\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// A subagent's record and the id it is tagged with: a grandchild's events carry the path of
/// ids from the top (`subagent-1/subagent-2`).
fn innermost(event: &AgentEvent) -> (String, Option<&dsh_protocol::Record>) {
    let mut path = Vec::new();
    let mut event = event;
    while let AgentEvent::Child {
        agent_id,
        event: inner,
    } = event
    {
        path.push(agent_id.as_str());
        event = inner;
    }
    let record = match event {
        AgentEvent::Record(record) => Some(record),
        _ => None,
    };
    (path.join("/"), record)
}

/// A line for the user from outside the turn (an MCP server's output or state), on stderr.
pub fn notice(line: &str) {
    let _ = writeln!(std::io::stderr(), "dsh: {line}");
}
