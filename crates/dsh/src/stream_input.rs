//! `--input-format stream-json`: one process serves a conversation. User messages arrive on
//! stdin as JSON lines, in the shape Claude Code's stream input uses
//! (`{"type":"user","message":{"role":"user","content":"..."}}`, the content a string or text
//! blocks), and each is one run of the agent, answered in the `--json` stream and closed by its
//! own `final`. `{"type":"interrupt"}` stops the turn in progress; messages that arrive during
//! a turn wait for it. EOF ends the process after the last turn.

use std::collections::VecDeque;

use dsh_core::{Run, Stop};
use dsh_protocol::AbortReason;
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use crate::surface::Surface;

/// One line of stdin, read.
#[derive(Debug, PartialEq)]
enum Input {
    Message(String),
    Interrupt,
    /// A line that is not one of the above: said in an `error` event and skipped.
    Bad(String),
}

/// Serves stdin's messages until EOF or a stop; returns the exit status of the last turn (0
/// when there was none).
pub async fn serve(run: &mut Run, surface: &mut Surface, stop: &Stop) -> u8 {
    let mut inputs = read_stdin();
    let mut waiting: VecDeque<String> = VecDeque::new();
    let mut open = true;
    let mut status = 0;
    loop {
        if stop.is_requested() {
            return stopped(surface, stop, status);
        }
        let Some(task) = waiting.pop_front() else {
            if !open {
                return status;
            }
            tokio::select! {
                input = inputs.recv() => match input {
                    Some(Input::Message(text)) => waiting.push_back(text),
                    // Nothing is running: nothing to stop.
                    Some(Input::Interrupt) => {}
                    Some(Input::Bad(problem)) => bad_input(surface, &problem),
                    None => open = false,
                },
                () = stop.token().cancelled() => return stopped(surface, stop, status),
            }
            continue;
        };
        let turn_stop = stop.for_turn();
        surface.begin_run();
        let mut running = run.start_task(task, &turn_stop);
        loop {
            tokio::select! {
                event = running.next_event() => match event {
                    Some(event) => surface.event(&event),
                    None => break,
                },
                input = inputs.recv(), if open => match input {
                    Some(Input::Message(text)) => waiting.push_back(text),
                    Some(Input::Interrupt) => turn_stop.request(AbortReason::User),
                    Some(Input::Bad(problem)) => bad_input(surface, &problem),
                    None => open = false,
                },
            }
        }
        match running.outcome().await {
            Ok(summary) => {
                let session_id = run.agent.session().id().to_owned();
                surface.finish(&session_id, &summary, run.agent.structured_output());
                status = crate::exit_status::of(&summary.reason);
            }
            Err(error) => {
                // The log cannot be written: no later turn could be either.
                let message = error.to_string();
                surface.fail(&message, &message, Some(error.code().into()));
                return 1;
            }
        }
    }
}

/// The process was stopped between messages: a signal (its status comes from the signal) or
/// `--timeout`, which is said as it is when no turn runs to end with it.
fn stopped(surface: &mut Surface, stop: &Stop, status: u8) -> u8 {
    // A turn that the timeout ended has said so in its `final`.
    if stop.expired().is_none() || status == crate::exit_status::TIMEOUT {
        return status;
    }
    let message = "the run's --timeout ran out while waiting for the next message";
    surface.fail(message, message, Some("RUN_TIMEOUT".into()));
    crate::exit_status::TIMEOUT
}

fn bad_input(surface: &mut Surface, problem: &str) {
    surface.fail(problem, problem, Some("BAD_INPUT".into()));
}

/// Reads stdin line by line in the background, so an interrupt is seen while a turn runs.
fn read_stdin() -> mpsc::UnboundedReceiver<Input> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let mut number = 0;
        loop {
            let line = match lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return,
                Err(e) => {
                    let _ = tx.send(Input::Bad(format!(
                        "stdin line {}: cannot be read: {e}; the stream ends here",
                        number + 1
                    )));
                    return;
                }
            };
            number += 1;
            if line.trim().is_empty() {
                continue;
            }
            if tx.send(parse(number, &line)).is_err() {
                return;
            }
        }
    });
    rx
}

/// One line of the input stream.
fn parse(number: usize, line: &str) -> Input {
    let bad = |what: &str| {
        Input::Bad(format!(
            "stdin line {number}: {what}; send {{\"type\":\"user\",\"message\":{{\"role\":\
             \"user\",\"content\":\"...\"}}}} or {{\"type\":\"interrupt\"}}, one per line \
             (the line was skipped)"
        ))
    };
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return bad("not JSON");
    };
    match value["type"].as_str() {
        Some("interrupt") => Input::Interrupt,
        Some("user") => {
            let content = &value["message"]["content"];
            let text = match content {
                Value::String(text) => Some(text.clone()),
                Value::Array(blocks) => {
                    let texts: Option<Vec<&str>> = blocks
                        .iter()
                        .map(|b| (b["type"] == "text").then(|| b["text"].as_str()).flatten())
                        .collect();
                    texts.map(|t| t.join("\n"))
                }
                _ => None,
            };
            match text {
                Some(text) if !text.trim().is_empty() => Input::Message(text),
                Some(_) => bad("the message is empty"),
                None => bad("message.content must be a string or a list of text blocks"),
            }
        }
        Some(other) => bad(&format!("unknown type \"{other}\"")),
        None => bad("no \"type\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_messages_interrupts_or_named_mistakes() {
        assert_eq!(
            parse(
                1,
                r#"{"type":"user","message":{"role":"user","content":"hi"}}"#
            ),
            Input::Message("hi".into())
        );
        assert_eq!(
            parse(
                2,
                r#"{"type":"user","message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#
            ),
            Input::Message("a\nb".into())
        );
        assert_eq!(parse(3, r#"{"type":"interrupt"}"#), Input::Interrupt);
        let Input::Bad(problem) = parse(4, "hello") else {
            panic!("not JSON is bad input");
        };
        assert!(problem.starts_with("stdin line 4: not JSON;"), "{problem}");
        let Input::Bad(problem) = parse(
            5,
            r#"{"type":"user","message":{"content":[{"type":"image"}]}}"#,
        ) else {
            panic!("an image block is not text");
        };
        assert!(problem.contains("list of text blocks"), "{problem}");
    }
}
