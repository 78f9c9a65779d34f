//! An editor that holds the workspace's files open (ACP's client file system): `read` and
//! `edit` see its text, unsaved changes included, and `write` and `edit` go through it, so its
//! buffers and undo history follow what the agent changed. Everything else about a call is
//! unchanged: paths are resolved and fenced as before, and the read-before-change and
//! stale-version checks still compare the versions on disk.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

/// A future an editor answers.
pub type EditorFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, EditorRefused>> + Send + 'a>>;

/// The editor would not do what was asked: its reason, in its own words (a tool's error
/// quotes it to the model).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EditorRefused(pub String);

/// The editor's side. An error is the editor's reason.
pub trait EditorFiles: Send + Sync {
    /// Whether reads go to the editor.
    fn reads(&self) -> bool;
    /// Whether writes go to the editor.
    fn writes(&self) -> bool;
    /// The text of the file at `path` (absolute) as the editor has it.
    fn read_text<'a>(&'a self, path: &'a Path) -> EditorFuture<'a, String>;
    /// Writes `text` as the whole content of the file at `path` (absolute), creating it.
    fn write_text<'a>(&'a self, path: &'a Path, text: String) -> EditorFuture<'a, ()>;
}
