//! Ctrl-G and `/edit`: the composer's text written in the user's editor (`$VISUAL`, else
//! `$EDITOR`, else `vi`), which has the terminal until it exits; what it saved comes back to
//! the composer, unsent.

use std::io::Write as _;

use crossterm::event::EventStream;

use crate::app::App;
use crate::terminal::Screen;

/// Runs the editor on the composer's text. The input stream is dropped first, so no key
/// meant for the editor is read by the UI, and a new one is returned once the UI has the
/// terminal back.
pub async fn run(app: &mut App, term: &mut Screen, input: EventStream) -> EventStream {
    let text = app.composer.text();
    let suspended = term.suspend();
    drop(input);
    let edited = match suspended {
        Ok(()) => {
            let edited = tokio::task::spawn_blocking(move || edit(&text)).await;
            edited.unwrap_or_else(|e| Err(format!("the editor's task failed: {e}")))
        }
        Err(e) => Err(format!("cannot hand the terminal to the editor: {e}")),
    };
    let input = EventStream::new();
    if let Err(e) = term.resume() {
        app.error(format!("cannot take the terminal back: {e}"));
    }
    match edited {
        Ok(text) => app.composer.set_text(&text),
        Err(message) => app.error(message),
    }
    input
}

/// The editor's command: `$VISUAL`, else `$EDITOR`, else `vi`; run by `sh`, so it may carry
/// its own arguments (`code --wait`).
fn editor() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned())
}

/// Writes `text` to a file of its own (readable by the user alone), runs the editor on it
/// and reads it back, without the newline an editor adds at the end.
fn edit(text: &str) -> Result<String, String> {
    let file = tempfile_in_temp()?;
    let path = file.path().to_path_buf();
    (file.as_file())
        .write_all(text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let editor = editor();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status()
        .map_err(|e| format!("cannot run the editor ({editor}): {e}"))?;
    if !status.success() {
        return Err(format!(
            "the editor ({editor}) exited with {status}; the composer is unchanged"
        ));
    }
    let edited = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {} back: {e}", path.display()))?;
    let edited = edited.strip_suffix('\n').unwrap_or(&edited);
    Ok(edited.strip_suffix('\r').unwrap_or(edited).to_owned())
}

/// A new file in the temporary directory, created 0600, removed when dropped.
fn tempfile_in_temp() -> Result<NamedFile, String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = std::env::temp_dir();
    for attempt in 0..100u32 {
        let path = dir.join(format!("dsh-prompt-{}-{attempt}.md", std::process::id()));
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path);
        match opened {
            Ok(file) => return Ok(NamedFile { file, path }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
        }
    }
    Err(format!("cannot create a file in {}", dir.display()))
}

struct NamedFile {
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl NamedFile {
    fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn as_file(&self) -> &std::fs::File {
        &self.file
    }
}

impl Drop for NamedFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
