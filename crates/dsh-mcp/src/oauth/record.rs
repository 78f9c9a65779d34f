//! The file that keeps one server's sign-in: the client dsh is known as there, where its
//! authorization server is, the tokens, and what the server last asked for that the tokens do
//! not give. Readable by the user alone (the folder 0700, the file 0600), replaced whole by a
//! rename so a reader never sees half of it, and changed under a lock so two dsh processes
//! (a refresh here, a step-up there) do not lose each other's change.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What is kept for one server (one name at one URL).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The server's URL, for `dsh mcp list` and as a check against a file put under another
    /// server's name.
    pub url: String,
    #[serde(default)]
    pub client: Option<ClientRecord>,
    /// The authorization server's endpoints, so a run needs no discovery to refresh.
    #[serde(default)]
    pub metadata: Option<AuthorizationMetadata>,
    /// The resource indicator (RFC 8707) the tokens were issued for, sent again on renewal.
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub credentials: Option<StoredCredentials>,
    /// Scopes the server asked for (a 403 `insufficient_scope`) that the tokens lack: the next
    /// login asks for them too.
    #[serde(default)]
    pub wanted_scopes: Vec<String>,
    /// The last `WWW-Authenticate` challenge a run met, for a login whose own probe meets none
    /// (a server that lets anyone list its tools and asks for a sign-in only on a call).
    #[serde(default)]
    pub challenge: Option<String>,
}

/// The client dsh is known as at the authorization server.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct ClientRecord {
    pub id: String,
    #[serde(default)]
    pub secret: Option<String>,
    pub redirect_uri: String,
    pub source: ClientSource,
}

impl std::fmt::Debug for ClientRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRecord")
            .field("id", &self.id)
            .field("secret", &self.secret.as_ref().map(|_| "[hidden]"))
            .field("redirect_uri", &self.redirect_uri)
            .field("source", &self.source)
            .finish()
    }
}

/// How dsh got its client id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ClientSource {
    /// The configuration's `oauth.client_id`.
    Configured,
    /// Dynamic client registration (RFC 7591).
    Registered,
    /// A client ID metadata document's URL (the configuration's `oauth.client_metadata_url`).
    MetadataDocument,
}

impl ClientSource {
    pub(crate) fn words(self) -> &'static str {
        match self {
            ClientSource::Configured => "the configured client id",
            ClientSource::Registered => "a client registered by dsh",
            ClientSource::MetadataDocument => "the client metadata document",
        }
    }
}

/// Where the record of server `name` at `url` is kept under `dir`: the name for people, a hash
/// of the URL so a server moved to another URL starts afresh (its tokens are bound to the
/// old one).
pub(crate) fn record_path(dir: &Path, name: &str, url: &str) -> PathBuf {
    let digest = Sha256::digest(url.as_bytes());
    let hash: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{name}-{hash}.json"))
}

/// A sign-in record, or its lock, that cannot be read, written or removed: the file and why.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// What was being done (`read`, `remove`, `create`, `open`, `lock`, `write`) to the file.
    #[error("cannot {doing} {}: {source}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} is not a sign-in record dsh can read ({source}); remove it with `dsh mcp logout`",
        path.display()
    )]
    Unreadable {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot encode the sign-in record: {0}")]
    Encode(#[source] serde_json::Error),
    /// A lock file's name holds a link or something other than a file.
    #[error(
        "{} is a symbolic link or not a regular file: dsh takes its sign-in locks only on a \
         file of its own. Remove it and try again",
        .0.display()
    )]
    NotOwnFile(PathBuf),
    #[error("cannot open {}: it keeps changing; check what else writes there", .0.display())]
    KeepsChanging(PathBuf),
}

/// `source` met while `doing` something to `path`.
fn io(doing: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> RecordError {
    let path = path.to_path_buf();
    move |source| RecordError::Io {
        doing,
        path,
        source,
    }
}

/// The record at `path`, or `None` when there is none (or it is not for `url`).
pub(crate) fn read(path: &Path, url: &str) -> Result<Option<Record>, RecordError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", path)(e)),
    };
    let record: Record = serde_json::from_str(&text).map_err(|source| RecordError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    Ok((record.url == url).then_some(record))
}

/// Reads, changes and writes the record at `path` under its lock; a missing record starts
/// empty for `url`.
pub(crate) fn update<T>(
    path: &Path,
    url: &str,
    change: impl FnOnce(&mut Record) -> T,
) -> Result<T, RecordError> {
    let _lock = lock(path)?;
    let mut record = read(path, url)?.unwrap_or_default();
    record.url = url.to_owned();
    let out = change(&mut record);
    write(path, &record)?;
    Ok(out)
}

/// As [`update`], but only a record that exists: a sign-in removed meanwhile (`dsh mcp
/// logout`) is not brought back by a run that was still using it. `None` when there was none.
pub(crate) fn update_existing<T>(
    path: &Path,
    url: &str,
    change: impl FnOnce(&mut Record) -> T,
) -> Result<Option<T>, RecordError> {
    let _lock = lock(path)?;
    let Some(mut record) = read(path, url)? else {
        return Ok(None);
    };
    let out = change(&mut record);
    write(path, &record)?;
    Ok(Some(out))
}

/// Removes the record; whether there was one. Under the lock, so a change in progress
/// finishes first; the lock files stay, since another process may hold them.
pub(crate) fn remove(path: &Path) -> Result<bool, RecordError> {
    let _lock = lock(path)?;
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io("remove", path)(e)),
    }
}

/// The record's folder made (for the user alone) and its lock taken.
fn lock(path: &Path) -> Result<FileLock, RecordError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io("create", dir))?;
    FileLock::exclusive(&lock_path(path, "lock"))
}

fn write(path: &Path, record: &Record) -> Result<(), RecordError> {
    let text = serde_json::to_string_pretty(record).map_err(RecordError::Encode)?;
    let temporary = lock_path(path, "new");
    let _ = std::fs::remove_file(&temporary);
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        io("write", path)(e)
    })?;
    // A record written by an older tool with wider permissions is narrowed too.
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    Ok(())
}

fn lock_path(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(format!(".{suffix}"));
    path.with_file_name(name)
}

/// An exclusive `flock` on a file of its own, released when dropped (the file is closed).
struct FileLock(#[allow(dead_code)] File);

impl FileLock {
    fn exclusive(path: &Path) -> Result<FileLock, RecordError> {
        use std::os::fd::AsRawFd;
        let file = lock_file(path)?;
        loop {
            // SAFETY: flock on a descriptor this function owns.
            let status = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if status == 0 {
                return Ok(FileLock(file));
            }
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::Interrupted {
                return Err(io("lock", path)(error));
            }
        }
    }
}

/// The lock file at `path`, opened as a file of its own: never through a link put at its
/// name (opening one would create or open whatever it points at, anywhere the user may
/// write), never something other than a file (a FIFO would hang the open), and made only
/// where nothing is (`O_CREAT|O_EXCL`).
fn lock_file(path: &Path) -> Result<File, RecordError> {
    let refused = || RecordError::NotOwnFile(path.to_path_buf());
    let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // A second try covers a lock file another dsh made, or removed, between the two opens.
    for _ in 0..2 {
        match OpenOptions::new()
            .write(true)
            .custom_flags(flags)
            .open(path)
        {
            Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => return Ok(file),
            Ok(_) => return Err(refused()),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(refused()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("open", path)(e)),
        }
        let made = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(flags)
            .open(path);
        match made {
            Ok(file) => return Ok(file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io("create", path)(e)),
        }
    }
    Err(RecordError::KeepsChanging(path.to_path_buf()))
}

/// The values in a record that are secrets: tokens and the client secret, for the run's
/// redaction.
pub(crate) fn secrets(record: &Record) -> Vec<String> {
    use oauth2::TokenResponse;
    let mut values = Vec::new();
    if let Some(response) = record
        .credentials
        .as_ref()
        .and_then(|c| c.token_response.as_ref())
    {
        values.push(response.access_token().secret().clone());
        if let Some(refresh) = response.refresh_token() {
            values.push(refresh.secret().clone());
        }
    }
    if let Some(secret) = record.client.as_ref().and_then(|c| c.secret.clone()) {
        values.push(secret);
    }
    values.retain(|v| !v.is_empty());
    values
}

/// rmcp's view of the record: the tokens alone, read and written through the record.
pub(crate) struct RecordStore {
    pub path: PathBuf,
    pub url: String,
    /// Told of every token read or saved, so a token renewed here or by another dsh process is
    /// redacted from then on.
    pub redactor: Option<dsh_tools::Redactor>,
    /// For a login: the record may be new, and what dsh is known as there (and where the
    /// authorization server is) is written with the tokens, in the same change.
    pub signing_in: Option<SignedInWith>,
}

/// What a login writes beside the tokens.
#[derive(Clone)]
pub(crate) struct SignedInWith {
    pub client: ClientRecord,
    pub metadata: AuthorizationMetadata,
    /// The resource indicator the tokens were issued for.
    pub resource: Option<String>,
}

fn store_error(error: RecordError) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

impl RecordStore {
    fn learn(&self, values: Vec<String>) {
        if let Some(redactor) = &self.redactor {
            redactor.learn(values);
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for RecordStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let record = read(&self.path, &self.url).map_err(store_error)?;
        if let Some(record) = &record {
            self.learn(secrets(record));
        }
        Ok(record.and_then(|r| r.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let change = |record: &mut Record| {
            // Tokens that now cover what the server asked for settle the wish.
            record
                .wanted_scopes
                .retain(|s| !credentials.granted_scopes.contains(s));
            record.credentials = Some(credentials);
            if let Some(with) = &self.signing_in {
                record.client = Some(with.client.clone());
                record.metadata = Some(with.metadata.clone());
                record.resource.clone_from(&with.resource);
                record.challenge = None;
            }
            secrets(record)
        };
        let learned = if self.signing_in.is_some() {
            Some(update(&self.path, &self.url, change).map_err(store_error)?)
        } else {
            update_existing(&self.path, &self.url, change).map_err(store_error)?
        };
        self.learn(learned.unwrap_or_default());
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        update_existing(&self.path, &self.url, |record| record.credentials = None)
            .map(|_| ())
            .map_err(store_error)
    }

    /// One refresh at a time across dsh processes: a refresh token is often good for one use.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let path = lock_path(&self.path, "refresh");
        let lock = tokio::task::spawn_blocking(move || FileLock::exclusive(&path))
            .await
            .map_err(|e| AuthError::CredentialStoreError(format!("the refresh lock failed: {e}")))?
            .map_err(store_error)?;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_private_and_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = record_path(&dir.path().join("auth"), "docs", "https://h/mcp");
        assert!(
            path.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("docs-")
        );
        update(&path, "https://h/mcp", |r| {
            r.wanted_scopes = vec!["read".into()];
        })
        .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let folder = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(folder & 0o777, 0o700);
        let record = read(&path, "https://h/mcp").unwrap().unwrap();
        assert_eq!(record.wanted_scopes, ["read"]);
        // Another URL under the same file name is not this server's record.
        assert!(read(&path, "https://other/mcp").unwrap().is_none());
        assert!(remove(&path).unwrap());
        assert!(!remove(&path).unwrap());
        // Only a login creates a record: a run's change finds none and makes none.
        assert_eq!(
            update_existing(&path, "https://h/mcp", |_| ()).unwrap(),
            None
        );
        assert!(!path.exists());
    }

    /// A record that is not dsh's, or a lock's name taken by a link, is refused with the path.
    #[test]
    fn a_record_or_lock_dsh_cannot_use_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.json");
        std::fs::write(&path, "not json").unwrap();
        let unreadable = read(&path, "u").unwrap_err();
        assert!(
            matches!(&unreadable, RecordError::Unreadable { path: p, .. } if *p == path),
            "{unreadable:?}"
        );
        assert!(
            unreadable
                .to_string()
                .ends_with("; remove it with `dsh mcp logout`")
        );
        std::os::unix::fs::symlink("/dev/null", lock_path(&path, "lock")).unwrap();
        let linked = remove(&path).unwrap_err();
        assert!(
            matches!(&linked, RecordError::NotOwnFile(p) if *p == lock_path(&path, "lock")),
            "{linked:?}"
        );
    }

    /// A token another dsh process renewed is a secret this run learns when it reads it.
    #[tokio::test]
    async fn a_token_read_from_the_record_is_redacted_from_then_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.json");
        let token = serde_json::from_value(serde_json::json!({
            "access_token": "renewed-elsewhere-0123456789",
            "token_type": "bearer"
        }))
        .unwrap();
        update(&path, "u", |record| {
            record.credentials = Some(StoredCredentials::new(
                "client".into(),
                Some(token),
                Vec::new(),
                None,
            ));
        })
        .unwrap();
        let redactor = dsh_tools::Redactor::learning().unwrap();
        let store = RecordStore {
            path,
            url: "u".into(),
            redactor: Some(redactor.clone()),
            signing_in: None,
        };
        assert!(store.load().await.unwrap().is_some());
        assert_eq!(
            redactor.redact("Bearer renewed-elsewhere-0123456789"),
            "Bearer [REDACTED]"
        );
    }

    #[test]
    fn a_damaged_record_says_how_to_start_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        std::fs::write(&path, "{not json").unwrap();
        let error = read(&path, "u").unwrap_err();
        assert!(error.to_string().contains("dsh mcp logout"), "{error}");
    }
}
