//! A command the user ran themselves (`!cmd` in the terminal UI): how it is put in the
//! conversation, so the model reads it at its next turn, and read back, so a front end shows it
//! as a command and its output rather than as a message. [`crate::Agent::run_shell`] runs it.

/// The first line of the message that carries a user's command: it says who ran it and that
/// the model was not asked.
pub const HEADER: &str = "The user ran this shell command themselves (no model request); dsh \
                          ran it under the session's sandbox and permission mode, and this is \
                          its output:";

/// The message the model reads: the header, `$ command`, then the `bash` tool's result as it
/// would read it for a call of its own (exit markers included).
pub fn message(command: &str, output: &str) -> String {
    format!("{HEADER}\n$ {command}\n{output}")
}

/// A user's command read back from its message: the command and its output, or `None` for any
/// other message.
pub fn read(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix(HEADER)?.strip_prefix("\n$ ")?;
    Some(rest.split_once('\n').unwrap_or((rest, "")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_message_reads_back_as_its_command_and_output() {
        let text = super::message("ls -a", "one\ntwo\n[exit code: 2]");
        assert_eq!(
            super::read(&text),
            Some(("ls -a", "one\ntwo\n[exit code: 2]"))
        );
        assert_eq!(super::read("$ ls"), None);
        assert_eq!(super::read(&super::message("true", "")), Some(("true", "")));
    }
}
