use serde_json::Value;

/// One scripted answer to one request.
#[derive(Debug, Clone)]
pub enum Turn {
    Answer(Answer),
    /// Refuse the request with this HTTP status and body.
    Status {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    /// Read the request and never answer; the connection stays open until the client closes it.
    Hang,
    /// Start a streamed answer with this text, then stall: the stream never ends.
    HangMidStream(String),
    /// A fault: the answer is cut short or damaged the way `Fault` says.
    Fault(Fault),
    /// Wait this long before answering at all (a slow first byte).
    Delayed(std::time::Duration, Box<Turn>),
    /// Answer only once the server has received this many requests in all: a barrier that
    /// shows requests were in flight together, whatever the machine's speed. Past a minute
    /// without them the request is refused (500), naming how many came.
    AfterRequests(usize, Box<Turn>),
}

/// A damaged answer.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Start streaming this text, then reset the connection.
    ResetMidStream(String),
    /// Stream the whole answer (finish reason and usage included) but close the connection
    /// before `[DONE]`.
    ClosedBeforeDone(Answer),
    /// Send an event that is not JSON.
    MalformedEvent,
    /// A stream with nothing in it but `[DONE]`.
    Empty,
}

/// A streamed answer.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub text: String,
    pub reasoning: Option<String>,
    /// `(name, raw argument text)`.
    pub tool_calls: Vec<(String, String)>,
    /// `(prompt, completion, cached)` tokens; `None` sends no usage at all.
    pub usage: Option<(u64, u64, u64)>,
    /// The finish reason; by default `tool_calls` when there are calls, else `stop`.
    pub finish: Option<String>,
    /// The usage object exactly as sent, in place of the one made from `usage`: how a server
    /// that bills as a provider ([`crate::ScriptedServer::bill_as`]) reports in its fields.
    pub wire_usage: Option<Value>,
}

const DEFAULT_USAGE: Option<(u64, u64, u64)> = Some((100, 10, 0));

impl Turn {
    /// A script written as JSON, for a process that drives another program (a browser test):
    /// a list of turns, each `{"text": T}`, `{"reasoning": R, "text": T}`, `{"calls": [[NAME,
    /// ARGUMENTS], ...]}` (with `"text"` too if wanted), `{"hang": true}` or `{"stall": T}`
    /// (start answering T, then never finish). What is wrong with a turn is named.
    pub fn script_from_json(script: &Value) -> Result<Vec<Turn>, String> {
        let turns = script
            .as_array()
            .ok_or("a script is a JSON list of turns")?;
        turns
            .iter()
            .enumerate()
            .map(|(i, turn)| {
                if turn["hang"] == true {
                    return Ok(Turn::hang());
                }
                if let Some(text) = turn["stall"].as_str() {
                    return Ok(Turn::hang_mid_stream(text));
                }
                let text = turn["text"].as_str().unwrap_or_default();
                let mut scripted = match turn["calls"].as_array() {
                    Some(calls) => {
                        let calls: Vec<(&str, Value)> = calls
                            .iter()
                            .map(|call| Some((call.get(0)?.as_str()?, call.get(1)?.clone())))
                            .collect::<Option<_>>()
                            .ok_or_else(|| format!("turn {i}: each call is [NAME, ARGUMENTS]"))?;
                        Turn::tool_calls(&calls).with_text(text)
                    }
                    None if turn.get("text").is_some() => Turn::text(text),
                    None => return Err(format!("turn {i} has no text, calls, hang or stall")),
                };
                if let Some(reasoning) = turn["reasoning"].as_str() {
                    scripted = scripted.reasoning(reasoning);
                }
                Ok(scripted)
            })
            .collect()
    }

    /// A `bash` call of `command` that asks to leave the sandbox (danger-full-access),
    /// justified as needing the whole machine: what the approval tests put to the user.
    pub fn escalated(command: &str) -> Turn {
        Turn::tool_call(
            "bash",
            serde_json::json!({
                "command": command,
                "description": "print a word",
                "sandbox_permissions": "danger-full-access",
                "justification": "needs the whole machine",
            }),
        )
    }

    /// A final answer.
    pub fn text(text: &str) -> Turn {
        Turn::Answer(Answer {
            text: text.into(),
            usage: DEFAULT_USAGE,
            ..Answer::default()
        })
    }

    /// One tool call with JSON arguments.
    pub fn tool_call(name: &str, arguments: Value) -> Turn {
        Turn::tool_calls(&[(name, arguments)])
    }

    /// Several tool calls in one answer.
    pub fn tool_calls(calls: &[(&str, Value)]) -> Turn {
        Turn::Answer(Answer {
            tool_calls: calls
                .iter()
                .map(|(n, a)| ((*n).to_owned(), a.to_string()))
                .collect(),
            usage: DEFAULT_USAGE,
            ..Answer::default()
        })
    }

    /// A tool call whose argument text is sent verbatim (for example malformed JSON).
    pub fn raw_tool_call(name: &str, arguments: &str) -> Turn {
        Turn::Answer(Answer {
            tool_calls: vec![(name.to_owned(), arguments.to_owned())],
            usage: DEFAULT_USAGE,
            ..Answer::default()
        })
    }

    /// An HTTP refusal with a JSON error body carrying `message`.
    pub fn status(status: u16, message: &str) -> Turn {
        let body =
            serde_json::json!({"error": {"message": message, "type": "scripted"}}).to_string();
        Turn::Status {
            status,
            body,
            headers: Vec::new(),
        }
    }

    pub fn hang() -> Turn {
        Turn::Hang
    }

    /// A refusal with headers, e.g. `429` with `Retry-After`.
    pub fn status_with(status: u16, message: &str, headers: &[(&str, &str)]) -> Turn {
        let Turn::Status { body, .. } = Turn::status(status, message) else {
            unreachable!("Turn::status makes a Status")
        };
        Turn::Status {
            status,
            body,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    /// This turn, sent only after `delay`.
    pub fn delayed(self, delay: std::time::Duration) -> Turn {
        Turn::Delayed(delay, Box::new(self))
    }

    /// This turn, sent only once `count` requests have arrived in all ([`Turn::AfterRequests`]).
    pub fn after_requests(self, count: usize) -> Turn {
        Turn::AfterRequests(count, Box::new(self))
    }

    /// An answer that starts streaming `text` and then stalls.
    pub fn hang_mid_stream(text: &str) -> Turn {
        Turn::HangMidStream(text.into())
    }

    /// Adds reasoning before the answer.
    pub fn reasoning(self, reasoning: &str) -> Turn {
        self.map(|a| a.reasoning = Some(reasoning.into()))
    }

    /// Sets the usage the server reports.
    pub fn usage(self, prompt: u64, completion: u64, cached: u64) -> Turn {
        self.map(|a| a.usage = Some((prompt, completion, cached)))
    }

    /// Reports no usage.
    pub fn without_usage(self) -> Turn {
        self.map(|a| a.usage = None)
    }

    /// Sets the finish reason (`length`, `content_filter`, ...).
    pub fn finish(self, reason: &str) -> Turn {
        self.map(|a| a.finish = Some(reason.into()))
    }

    /// Adds text to an answer (also to one that calls tools).
    pub fn with_text(self, text: &str) -> Turn {
        self.map(|a| a.text = text.into())
    }

    fn map(self, f: impl FnOnce(&mut Answer)) -> Turn {
        match self {
            Turn::Answer(mut answer) => {
                f(&mut answer);
                Turn::Answer(answer)
            }
            other => other,
        }
    }
}
