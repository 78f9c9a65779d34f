//! Keeping the history inside the model's context window.
//!
//! Before each step the history's size is measured: the last request's reported prompt tokens
//! plus an estimate (4 characters a token) of what was added since, or the estimate of it all
//! when nothing was reported. At `compaction.threshold` of the window (0.8 unless set; never
//! with `compaction.auto = false`), first every tool result over
//! [`PRUNE_CHARS`] characters is cut to its head and tail (the log keeps the whole result);
//! if the history is still too large, its older part is summarised by the model and replaced by
//! one user message holding the summary, keeping the most recent [`RETAIN_RATIO`] of the window
//! as it was. A provider's `CONTEXT_WINDOW_EXCEEDED` answer compacts the same way and the step
//! is tried once more. Both steps are records in the log, so a resumed session rebuilds the
//! same history.

pub(crate) mod compactor;

use dsh_protocol::{Block, Message, Role, ToolOutputPart};

/// The share of the window kept verbatim at the end of the history when summarising.
pub const RETAIN_RATIO: f64 = 0.16;
/// Tool results longer than this (in characters) are pruned.
pub const PRUNE_CHARS: usize = 8192;
/// What a pruned result keeps of its start and its end.
pub const PRUNE_HEAD: usize = 4096;
pub const PRUNE_TAIL: usize = 1024;
/// The marker between a pruned result's head and tail (the reference's).
pub const PRUNE_MARKER: &str = "\n\n[... tool result middle pruned ...]\n\n";
/// The most output tokens a summary may take.
pub const SUMMARY_MAX_TOKENS: u32 = 8192;
/// The least the older part of the history must hold (estimated tokens) for a compaction the
/// user asks for to send a summary request: below it, a checkpoint would save little or be
/// longer than what it replaces.
pub const MANUAL_MIN_TOKENS: u64 = 1_000;

/// Asked of the model, after the part of the history to condense.
pub const SUMMARY_INSTRUCTION: &str = "Stop working on the task for a moment: your job now is to \
write a checkpoint of the conversation above, so that the work can continue from it after the \
conversation itself is dropped. Do not call any tool. Write these sections, each a few terse \
bullets, `(none)` when a section is empty:\n\
## Goal — what the user asked for, and any constraints they set\n\
## State — what has been done, what was found, decisions taken and why\n\
## Files — every file read, created or changed, with what matters about it\n\
## Problems — errors met and how each was resolved or left\n\
## Background jobs — jobs still running, with their ids\n\
## Next — the immediate next step, and what remains after it\n\
Keep exact names, paths, commands, identifiers and numbers. If the conversation starts with an \
earlier checkpoint, merge it into this one rather than quoting it.";

/// How the message that restates the session's goal after a summary starts (a front end
/// shows it as a note, not as the user's words).
pub const GOAL_RESTATED: &str =
    "<system-reminder>\nThe session's goal, restated after the conversation was condensed";

/// The text before a summary in the message that replaces the condensed history.
pub const CHECKPOINT_PREAMBLE: &str = "The earlier part of this conversation was condensed into \
the checkpoint below to save context. Take it as established and carry on from the messages \
after it; do not mention the checkpoint.";

/// What a compaction the user asked for (`/compact`) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManualCompaction {
    /// The older part of the history was too short to be worth a summary, and none was asked
    /// for; `tokens` is the history's estimated size, `pruned` whether long tool results were
    /// cut.
    TooShort { tokens: u64, pruned: bool },
    /// The older part was replaced by the model's summary (a `compaction/summary` record).
    Summarised,
    /// The summary was asked for but not used: stopped, failed, cut at its output limit, or
    /// no shorter than what it would replace.
    NotSummarised { pruned: bool },
}

/// The estimated tokens of `messages`: 4 characters a token, plus a little per message.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(message_tokens).sum()
}

/// What an image is counted as, in characters of text: a typical one's tokens.
const IMAGE_CHARS: usize = 3000;

fn message_tokens(message: &Message) -> u64 {
    let chars: usize = message
        .content
        .iter()
        .map(|block| match block {
            Block::Text { text } => text.len(),
            Block::Reasoning { text, .. } => text.len(),
            Block::ToolCall {
                name, arguments, ..
            } => name.len() + arguments.len() + 16,
            Block::ToolResult { content, .. } => content
                .iter()
                .map(|part| match part {
                    ToolOutputPart::Text { text } => text.len(),
                    // An image costs its own tokens; count a typical one.
                    ToolOutputPart::Image { .. } => IMAGE_CHARS,
                })
                .sum(),
            Block::Image { .. } => IMAGE_CHARS,
        })
        .sum();
    (chars as u64).div_ceil(4) + 4
}

/// The tool results to prune: (history index, call id, the message that replaces it).
pub fn prunable(history: &[Message]) -> Vec<(usize, String, Message)> {
    let mut pruned = Vec::new();
    for (index, message) in history.iter().enumerate() {
        let mut changed = false;
        let content: Vec<Block> = message
            .content
            .iter()
            .map(|block| match block {
                Block::ToolResult {
                    tool_call_id,
                    content,
                    is_error,
                } => Block::ToolResult {
                    tool_call_id: tool_call_id.clone(),
                    content: content
                        .iter()
                        .map(|part| match part {
                            ToolOutputPart::Text { text } => match prune_text(text) {
                                Some(short) => {
                                    changed = true;
                                    ToolOutputPart::Text { text: short }
                                }
                                None => part.clone(),
                            },
                            other => other.clone(),
                        })
                        .collect(),
                    is_error: *is_error,
                },
                other => other.clone(),
            })
            .collect();
        if !changed {
            continue;
        }
        let id = message.content.iter().find_map(|block| match block {
            Block::ToolResult { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        });
        if let Some(id) = id {
            pruned.push((
                index,
                id,
                Message {
                    role: message.role,
                    content,
                },
            ));
        }
    }
    pruned
}

/// `text`'s head and tail around the marker, if it is over the limit (counted in characters,
/// cut on character boundaries).
pub fn prune_text(text: &str) -> Option<String> {
    let count = text.chars().count();
    if count <= PRUNE_CHARS {
        return None;
    }
    let head: String = text.chars().take(PRUNE_HEAD).collect();
    let tail: String = text.chars().skip(count - PRUNE_TAIL).collect();
    Some(format!("{head}{PRUNE_MARKER}{tail}"))
}

/// How many leading messages to summarise so that about `retain` tokens stay as they are.
/// The cut falls before an assistant message or a plain user message, never between a call and
/// its result. `None` when there is nothing worth summarising.
pub fn split_point(history: &[Message], retain: u64) -> Option<usize> {
    let mut kept = 0u64;
    let mut cut = history.len();
    while cut > 0 {
        let size = message_tokens(&history[cut - 1]);
        if kept + size > retain {
            break;
        }
        kept += size;
        cut -= 1;
    }
    // Keep at least the last message, and start the kept part at a unit boundary: back to
    // the answer whose results it would otherwise split off.
    cut = cut.min(history.len().saturating_sub(1));
    while cut > 0 && is_tool_result(&history[cut]) {
        cut -= 1;
    }
    (cut >= 1).then_some(cut)
}

/// The longest head of `history` of at most `budget` estimated tokens that ends at a unit
/// boundary (never between a call and its result); `None` when not even one unit fits.
pub fn head_cut(history: &[Message], budget: u64) -> Option<usize> {
    let mut size = 0u64;
    let mut best = None;
    for (index, message) in history.iter().enumerate() {
        size += message_tokens(message);
        if size > budget {
            break;
        }
        let next = index + 1;
        if next < history.len() && !is_tool_result(&history[next]) {
            best = Some(next);
        }
    }
    best
}

/// Whether `message` carries tool results (and so belongs to the answer before it).
pub(crate) fn is_tool_result(message: &Message) -> bool {
    message
        .content
        .iter()
        .any(|block| matches!(block, Block::ToolResult { .. }))
}

/// Whether `message` is the checkpoint of an earlier summary, alone.
pub(crate) fn is_checkpoint(message: &Message) -> bool {
    matches!(message.content.as_slice(),
        [Block::Text { text }] if text.starts_with(CHECKPOINT_PREAMBLE))
}

/// The user message that stands for the summarised history.
pub fn checkpoint(summary: &str) -> Message {
    Message {
        role: Role::User,
        content: vec![Block::Text {
            text: format!(
                "{CHECKPOINT_PREAMBLE}\n\n<compacted-summary>\n{}\n</compacted-summary>",
                summary.trim()
            ),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        Message::user_text(text)
    }

    fn result(id: &str, text: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_call_id: id.into(),
                content: vec![ToolOutputPart::Text { text: text.into() }],
                is_error: false,
            }],
        }
    }

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolCall {
                id: id.into(),
                name: "read".into(),
                arguments: "{}".into(),
            }],
        }
    }

    #[test]
    fn long_results_keep_their_head_and_tail() {
        let text: String = "é".repeat(9000);
        let short = prune_text(&text).unwrap();
        assert!(short.starts_with(&"é".repeat(PRUNE_HEAD)));
        assert!(short.ends_with(&"é".repeat(PRUNE_TAIL)));
        assert!(short.contains(PRUNE_MARKER));
        assert!(prune_text(&"x".repeat(PRUNE_CHARS)).is_none());
        let history = vec![
            user("go"),
            call("a"),
            result("a", &text),
            call("b"),
            result("b", "ok"),
        ];
        let pruned = prunable(&history);
        assert_eq!(pruned.len(), 1);
        assert_eq!((pruned[0].0, pruned[0].1.as_str()), (2, "a"));
    }

    #[test]
    fn the_cut_never_separates_a_call_from_its_result() {
        let big = "x".repeat(4000);
        let history = vec![
            user("task"),
            call("a"),
            result("a", &big),
            call("b"),
            result("b", &big),
            call("c"),
            result("c", "small"),
        ];
        // Keeping ~1,100 tokens keeps the last result and a bit more: the cut moves off the
        // result so that the kept part starts with the call.
        let cut = split_point(&history, 1100).unwrap();
        assert!(!is_tool_result(&history[cut]), "cut at {cut}");
        assert_eq!(cut, 3);
        // Keeping nothing still keeps the last call with its result.
        assert_eq!(split_point(&history, 0), Some(5));
        // A head within a budget also ends before a call, never inside call and result.
        assert_eq!(head_cut(&history, 1100), Some(3));
        assert_eq!(head_cut(&history, 3), None);
        assert_eq!(split_point(&history[..1], 10), None);
    }
}
