//! `dsh sandbox check`: which backend would confine commands here, why each other one cannot,
//! and what to do about it.

use dsh_core::{Environment, SetupError};

/// Prints the report to stdout; the status is 0 when some backend can confine commands.
pub fn run(patches: &[std::path::PathBuf]) -> u8 {
    match report(patches) {
        Ok((text, usable)) => {
            use std::io::Write as _;
            let _ = std::io::stdout().write_all(text.as_bytes());
            if usable { 0 } else { 1 }
        }
        Err(error) => {
            let message = error.with_hint_line();
            crate::surface::Surface::new(false).fail(&message, &message, None);
            1
        }
    }
}

fn report(patches: &[std::path::PathBuf]) -> Result<(String, bool), SetupError> {
    dsh_core::sandbox_report(crate::place::cwd()?, &Environment::from_process(), patches)
}
