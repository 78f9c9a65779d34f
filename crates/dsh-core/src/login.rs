//! Signing in to a model provider with an API key: what `dsh login`, the terminal UI and the
//! web app do when no key is found. The key is checked against the provider with one request
//! that bills nothing (its model list), and only a key it takes is saved, readable by the user
//! alone, where every later run's credential chain finds it ([`crate::config::save_key`]).
//! The key is never printed, logged or put in an error.

use std::path::{Path, PathBuf};

use dsh_config::{Route, Settings};
use dsh_protocol::FailureCode;

/// Why a key was not saved.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error(
        "provider \"{provider}\" needs no key: its route declares no api_key_env \
         (docs/config.md#providers)"
    )]
    NoKeyNeeded { provider: String },
    /// The provider refused the key: ask for another.
    #[error("{0}")]
    Refused(String),
    /// The key could not be checked (the provider unreachable, an error of its own).
    #[error("the key could not be checked, so it was not saved: {0}")]
    Unchecked(String),
    #[error("{0}")]
    Save(#[from] dsh_config::SavedKeyError),
    /// The provider's address comes from a config file that is not the user's own (a
    /// project's): a key typed in would be sent where that file says.
    #[error(
        "the address of provider \"{provider}\" ({base_url}) is set by {file}, which is not \
         your own config: a key given here would be sent there. Sign in from a folder without \
         that config, or set the provider in your own config ($DSH_HOME/config.toml)"
    )]
    ForeignEndpoint {
        provider: String,
        base_url: String,
        file: String,
    },
    /// The provider's address is plain http to another machine: the key would travel
    /// unencrypted.
    #[error(
        "the address of provider \"{provider}\" ({base_url}) is plain http:// to a host that \
         is not this machine (only 127.0.0.1, ::1 and localhost are, with no user@ part): a key \
         given here would travel unencrypted. Give the provider its https:// address, or set \
         the key in the environment yourself if you mean to use that address"
    )]
    PlainHttp { provider: String, base_url: String },
}

/// The provider and key variable a sign-in is for: the route of the settings' model.
#[derive(Debug, Clone)]
pub struct KeyTarget {
    pub provider: String,
    /// Where the key is checked (the provider's API root), as it may be shown to the person
    /// giving it ([`dsh_protocol::shown_url`]: no password, no query).
    pub base_url: String,
    /// The variable the route reads its key from (`DEEPSEEK_API_KEY`).
    pub variable: String,
    /// Where a key is found now, if one is (`environment`, a `.env` file, the saved keys).
    pub found_in: Option<String>,
}

/// What `settings` sign in to; an error when its route needs no key, or when its address is
/// set by a config file that is not the user's (a repository's `.dsh/config.toml` must not get
/// to choose where a key typed in is sent).
pub fn key_target(settings: &Settings) -> Result<KeyTarget, LoginError> {
    let route = settings.route();
    let Some(variable) = route.key_variable() else {
        return Err(LoginError::NoKeyNeeded {
            provider: route.provider.clone(),
        });
    };
    if let dsh_config::Source::File(file) = &route.base_url.source
        && !file.starts_with(&settings.home().value)
    {
        return Err(LoginError::ForeignEndpoint {
            provider: route.provider.clone(),
            base_url: dsh_protocol::shown_url(&route.base_url.value),
            file: file.display().to_string(),
        });
    }
    let found_in = match &route.api_key {
        dsh_config::ApiKey::Found { from, .. } => Some(match from {
            dsh_config::EnvSource::Launch => "the environment".to_owned(),
            dsh_config::EnvSource::File(path) => path.display().to_string(),
        }),
        _ => None,
    };
    Ok(KeyTarget {
        provider: route.provider.clone(),
        base_url: dsh_protocol::shown_url(&route.base_url.value),
        variable: variable.to_owned(),
        found_in,
    })
}

/// Whether a key may be sent to the address of the settings' route to be checked: over https,
/// or over plain http to this machine only ([`dsh_protocol::address::check_secret_destination`]).
/// Asked before a key is asked for, and again before one is sent.
pub fn check_key_destination(settings: &Settings) -> Result<(), LoginError> {
    let route = settings.route();
    match dsh_protocol::address::check_secret_destination(&route.base_url.value) {
        Err(dsh_protocol::address::Insecure::PlainHttp) => Err(LoginError::PlainHttp {
            provider: route.provider.clone(),
            base_url: dsh_protocol::shown_url(&route.base_url.value),
        }),
        // Any other fault of the address is the provider's to report, when the key is checked.
        _ => Ok(()),
    }
}

/// Checks `key` with the provider of the settings' route ([`key_target`]) and saves it in dsh's
/// home; where it was saved.
pub async fn check_and_save_key(settings: &Settings, key: &str) -> Result<PathBuf, LoginError> {
    let key = key.trim();
    let target = key_target(settings)?;
    check_key_destination(settings)?;
    let route: &Route = settings.route();
    let home = &settings.home().value;
    let variable = target.variable.as_str();
    if key.is_empty() {
        return Err(LoginError::Refused(
            "no key was given: paste the key the provider's console shows".into(),
        ));
    }
    // A provider may quote the key it refused (`Incorrect API key provided: sk-...`): what
    // it says is shown with the key taken out, whole or in part.
    match crate::client::check_key(route, key).await {
        Ok(()) => {}
        Err(failure) if failure.code == FailureCode::Auth => {
            return Err(LoginError::Refused(dsh_tools::without_pieces(
                &failure.message,
                key,
            )));
        }
        Err(failure) => {
            return Err(LoginError::Unchecked(dsh_tools::without_pieces(
                &failure.message,
                key,
            )));
        }
    }
    dsh_config::save_key(home, variable, key)?;
    Ok(dsh_config::saved_keys_path(home))
}

/// Forgets the key saved under dsh's `home` for `target` ([`key_target`]); whether one was
/// saved, and the file.
pub fn forget_saved_key(home: &Path, target: &KeyTarget) -> Result<(bool, PathBuf), LoginError> {
    let forgotten = dsh_config::forget_key(home, &target.variable)?;
    Ok((forgotten, dsh_config::saved_keys_path(home)))
}
