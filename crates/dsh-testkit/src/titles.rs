//! Title requests: the short request dsh makes after a session's first turn to have the model
//! name it. The scripted server answers them apart from its script, so a test's turns are
//! never used up by one and tests that do not care about titles need not script them.

use serde_json::Value;

use crate::Turn;

/// The first words of what dsh tells the model in a title request (core's
/// `TITLE_INSTRUCTION`): how the server knows one.
pub(crate) const TITLE_MARK: &str = "Write a title for this coding session";

/// Whether `body` is a title request: it carries the mark and offers no tools.
pub(crate) fn is_title_request(body: &Value) -> bool {
    let offers_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    !offers_tools && body.to_string().contains(TITLE_MARK)
}

/// The answer when the test scripted none: the first six words of the first line of the
/// user's message, as a model that titles tersely would.
pub(crate) fn default_title(body: &Value) -> Turn {
    let text = body.to_string();
    let message = text
        .split("<message>\\n")
        .nth(1)
        .and_then(|rest| rest.split("\\n").next())
        .unwrap_or("Untitled");
    let words: Vec<&str> = message.split_whitespace().take(6).collect();
    Turn::text(&words.join(" ")).usage(40, 5, 0)
}
