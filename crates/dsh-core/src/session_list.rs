//! The sessions of a working directory, for `dsh sessions list` and `dsh sessions show`.

use std::path::{Path, PathBuf};

use dsh_config::{SessionChoice, Settings, SetupError};
use dsh_protocol::SessionSummary;

use crate::CoreError;
use crate::listing::Listing;
use crate::log::{cwd_slug, read_header};
use crate::session::log_file_in;

/// The sessions recorded in `cwd`, newest first, from the listing kept beside each log
/// ([`crate::listing`]): a log is read only as far as its listing does not cover it. A log
/// that cannot be read is skipped: one damaged session must not hide the others.
pub fn list_sessions(home: &Path, cwd: &Path) -> Vec<SessionSummary> {
    let folder = home.join("sessions").join(cwd_slug(&cwd.to_string_lossy()));
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut sessions: Vec<SessionSummary> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| log_file_in(&entry.path()))
        .filter_map(|path| Some(summarise(&crate::listing::current(&path)?, &path)))
        .collect();
    sessions.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
    sessions
}

/// Every session under `home`, grouped by the folder it was recorded in (the folders by their
/// newest session, each folder's sessions newest first); subagents' sessions left out. For a
/// front end that shows them all (the web app's sidebar).
pub fn all_sessions(home: &Path) -> Vec<(String, Vec<SessionSummary>)> {
    let Ok(folders) = std::fs::read_dir(home.join("sessions")) else {
        return Vec::new();
    };
    let mut groups: Vec<(String, Vec<SessionSummary>)> = Vec::new();
    for folder in folders.filter_map(Result::ok) {
        let Ok(entries) = std::fs::read_dir(folder.path()) else {
            continue;
        };
        for path in entries
            .filter_map(Result::ok)
            .filter_map(|entry| log_file_in(&entry.path()))
        {
            let Some(listing) = crate::listing::current(&path) else {
                continue;
            };
            if listing.parent_session.is_some() {
                continue;
            }
            let summary = summarise(&listing, &path);
            let cwd = listing.cwd;
            match groups.iter_mut().find(|(folder, _)| *folder == cwd) {
                Some((_, sessions)) => sessions.push(summary),
                None => groups.push((cwd, vec![summary])),
            }
        }
    }
    for (_, sessions) in &mut groups {
        sessions.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
    }
    groups.sort_by_key(|(_, sessions)| {
        std::cmp::Reverse(sessions.first().map_or(0, |s| s.created_at))
    });
    groups
}

/// The id of the session a run with `settings` continues or forks: the one `--session-id`
/// names, or for `--continue` the latest of the working directory ([`latest_session`]).
pub(crate) fn chosen_session(settings: &Settings) -> Result<Option<String>, SetupError> {
    let cwd = settings.cwd();
    match settings.session() {
        None => Ok(None),
        Some(SessionChoice::Id(id)) => Ok(Some(id.clone())),
        Some(SessionChoice::Latest) => match latest_session(&settings.home().value, cwd) {
            Some(id) => Ok(Some(id)),
            None => Err(SetupError::new(
                "SESSION_NOT_FOUND",
                format!(
                    "--continue: no session was recorded in {} yet; run without it to start one",
                    cwd.display()
                ),
            )),
        },
    }
}

/// The session of `cwd` used last (its log written most recently), subagents' aside, for
/// `--continue`. A log that cannot be read still counts: resuming it then says what is wrong
/// with it, instead of an older session being continued without a word.
fn latest_session(home: &Path, cwd: &Path) -> Option<String> {
    let folder = home.join("sessions").join(cwd_slug(&cwd.to_string_lossy()));
    let entries = std::fs::read_dir(folder).ok()?;
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let path = log_file_in(&entry.path())?;
            let used = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
            let id = entry.file_name().to_string_lossy().into_owned();
            let is_child = read_header(&path).is_ok_and(|h| h.parent_session.is_some());
            (!is_child).then_some((used, id))
        })
        .max()
        .map(|(_, id)| id)
}

fn summarise(listing: &Listing, path: &Path) -> SessionSummary {
    listing.summary(path.parent().and_then(read_title), path)
}

/// The log of session `id` recorded in `cwd`; an id recorded in another directory is
/// [`CoreError::OtherDirectory`], naming it.
pub fn session_log_path(home: &Path, cwd: &Path, id: &str) -> Result<PathBuf, CoreError> {
    crate::session::find_log(home, cwd, id).map(|(_, path)| path)
}

/// Deletes session `id` recorded in `cwd`: its folder (log, spilled results) goes. Refused
/// while a run holds it (its lock is taken first, so no run opens it meanwhile).
pub fn delete_session(home: &Path, cwd: &Path, id: &str) -> Result<(), CoreError> {
    let log = session_log_path(home, cwd, id)?;
    let dir = log.parent().map(Path::to_path_buf).unwrap_or_default();
    let _lock = crate::lock::SessionLock::acquire(&dir, id)?;
    std::fs::remove_dir_all(&dir).map_err(|source| CoreError::Log { path: dir, source })
}

/// The longest title a session may be given, in characters.
pub const MAX_TITLE_CHARS: usize = 120;
/// The file beside a session's log that holds the title the user gave it.
const TITLE_FILE: &str = "title";

/// Gives session `id` recorded in `cwd` the title `title`, which lists show in place of its
/// first task; an empty title takes it away again. The title is a file of its own beside the
/// log, replaced whole by a rename, so a session can be renamed while a run holds it: its log
/// stays written by that run alone.
pub fn rename_session(home: &Path, cwd: &Path, id: &str, title: &str) -> Result<(), CoreError> {
    let title = title.trim();
    if title.chars().any(char::is_control) {
        return Err(CoreError::BadTitle(
            "a session title is one line of text, without control characters".into(),
        ));
    }
    let count = title.chars().count();
    if count > MAX_TITLE_CHARS {
        return Err(CoreError::BadTitle(format!(
            "a session title has at most {MAX_TITLE_CHARS} characters; this one has {count}"
        )));
    }
    let log = session_log_path(home, cwd, id)?;
    let dir = log.parent().map(Path::to_path_buf).unwrap_or_default();
    let file = dir.join(TITLE_FILE);
    let failed = |source| CoreError::Log {
        path: file.clone(),
        source,
    };
    if title.is_empty() {
        return match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(failed(e)),
            _ => Ok(()),
        };
    }
    let staged = dir.join(format!(".{TITLE_FILE}.{}", std::process::id()));
    std::fs::write(&staged, title)
        .and_then(|()| std::fs::rename(&staged, &file))
        .map_err(|e| {
            let _ = std::fs::remove_file(&staged);
            failed(e)
        })
}

/// The title kept in a session's folder, if it was given one (and it reads as one).
pub(crate) fn read_title(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(TITLE_FILE)).ok()?;
    let title: String = text.trim().chars().take(MAX_TITLE_CHARS).collect();
    (!title.is_empty() && !title.chars().any(char::is_control)).then_some(title)
}

/// `YYYY-MM-DD HH:MM:SS` for milliseconds since the epoch, in UTC: how sessions are dated
/// for people (`dsh sessions list`) and, with a `T` and a `Z`, for programs (ACP).
pub fn utc_date_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc_date_time;

    #[test]
    fn utc_dates_are_civil_dates() {
        assert_eq!(utc_date_time(0), "1970-01-01 00:00:00");
        assert_eq!(utc_date_time(1_796_279_142_000), "2026-12-03 06:25:42");
        assert_eq!(utc_date_time(951_782_400_000), "2000-02-29 00:00:00");
    }
}
