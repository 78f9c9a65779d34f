//! An edit's or a write's change as diff lines for the page: `[sign, text]` pairs (`-`, `+`,
//! or a space for context), at most [`MAX_LINES`], then how many more there were.

use dsh_core::CallChange;
use serde_json::{Value, json};

/// The most lines a diff shows.
const MAX_LINES: usize = 400;

/// The lines of the change, as the page draws them.
pub(crate) fn lines(change: &CallChange<'_>) -> Value {
    let shown = change.lines(MAX_LINES);
    json!({
        "lines": (shown.lines.iter())
            .map(|(sign, text)| json!([sign.mark().to_string(), text]))
            .collect::<Vec<_>>(),
        "more": shown.more,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_lines_with_their_signs() {
        let change = CallChange {
            path: "a",
            old: Some("a\nb\n"),
            new: "a\nc\n",
            whole_file: false,
        };
        assert_eq!(
            lines(&change),
            json!({"lines": [[" ", "a"], ["-", "b"], ["+", "c"]], "more": 0})
        );
    }
}
