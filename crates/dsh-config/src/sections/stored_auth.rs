//! `[stored_auth]`: whether a run uses the authentication dsh stores, the keys `dsh login`
//! saved and the MCP servers' sign-ins. The reference's headless profile ignores both unless
//! its `credentials` and `authorization` rows restore them; so does `--profile headless` here.
//! Any other run, a headless one only because stdin or stdout is not a terminal included, uses
//! them.

use serde::Deserialize;

use crate::resolver::Resolver;
use crate::sourced::{Source, Sourced};
use crate::trust_look::{Guard, Reason};

/// How each key can let secrets through ([`crate::trust_look::Widens`]). Off under
/// `--profile headless`, which the files' layers do not know of: taken as off.
pub(crate) const GUARDS: &[Guard] = &[
    Guard::switch("stored_auth.saved_keys", true, false, Reason::Secrets),
    Guard::switch("stored_auth.mcp_sign_ins", true, false, Reason::Secrets),
];

/// Stored authentication: the keys `dsh login` saved and the MCP servers' OAuth sign-ins.
/// Both are used by default, and ignored under `--profile headless` unless a layer sets them
/// (the reference's `credentials` and `authorization` rows).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoredAuthConfig {
    /// Whether keys saved in `$DSH_HOME/credentials` are read.
    pub saved_keys: Option<bool>,
    /// Whether sign-ins stored in `$DSH_HOME/mcp-auth` are used.
    pub mcp_sign_ins: Option<bool>,
}

/// Where the headless profile's own choice comes from, in `--dump-config` and in errors.
pub(crate) const HEADLESS_PROFILE: &str = "--profile headless";

/// What a run does with stored authentication.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAuth {
    /// Whether the keys in `$DSH_HOME/credentials` are read.
    pub saved_keys: Sourced<bool>,
    /// Whether the sign-ins in `$DSH_HOME/mcp-auth` are used.
    pub mcp_sign_ins: Sourced<bool>,
}

impl StoredAuth {
    /// Why a stored sign-in of an MCP server is not used, or `None` when it is.
    pub fn unused_sign_in(&self) -> Option<String> {
        (!self.mcp_sign_ins.value).then(|| {
            unused(
                &self.mcp_sign_ins.source,
                "stored_auth.mcp_sign_ins",
                "the sign-ins `dsh mcp login` stored are",
            )
        })
    }

    /// Why the keys `dsh login` saved are not read, or `None` when they are.
    pub fn unused_saved_keys(&self) -> Option<String> {
        (!self.saved_keys.value).then(|| {
            unused(
                &self.saved_keys.source,
                "stored_auth.saved_keys",
                "the keys `dsh login` saved are",
            )
        })
    }
}

/// What is not used, why, and how to have it used.
fn unused(source: &Source, key: &str, what: &str) -> String {
    match source {
        Source::Flag(HEADLESS_PROFILE) => format!(
            "under --profile headless {what} not used unless a patch restores stored \
             authentication (the rows `- id: credentials`, `- id: authorization` and `- id: \
             deepseek-account`, each with `disabled: false`, in \
             $DSH_HOME/profiles/headless/cordis.patch.yml or a --patch file; docs/config.md#stored-authentication)"
        ),
        other => format!("{what} not used: {other} sets {key} = false"),
    }
}

pub(crate) fn resolve(
    r: &mut Resolver<'_>,
    config: &StoredAuthConfig,
    headless_profile: bool,
) -> StoredAuth {
    let profile = || headless_profile.then(|| Sourced::new(false, Source::Flag(HEADLESS_PROFILE)));
    let mut choice = |key: &str, value: Option<bool>| {
        let file = r.file(key, value);
        r.setting(key, [file, profile()], true)
    };
    let saved_keys = choice("stored_auth.saved_keys", config.saved_keys);
    let mcp_sign_ins = choice("stored_auth.mcp_sign_ins", config.mcp_sign_ins);
    StoredAuth {
        saved_keys,
        mcp_sign_ins,
    }
}
