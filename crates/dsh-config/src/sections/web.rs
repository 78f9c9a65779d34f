//! `[web]`: what `web_fetch` may reach and where `web_search` searches.

use std::time::Duration;

use serde::Deserialize;

use crate::dotenv::Credentials;
use crate::environment::SetupError;
use crate::files::{ProviderKind, SearchProvider, parsed};
use crate::resolver::Resolver;
use crate::route::{ApiKey, Route};
use crate::shown::Shown;
use crate::trust_look::{Guard, Reason};

const FETCH_TIMEOUT_MS: u64 = 30_000;
const SEARCH_TIMEOUT_MS: u64 = 60_000;

/// How each key can widen what the web tools may do ([`crate::trust_look::Widens`]); the
/// search backend's address and key variable are set aside whatever they say
/// ([`crate::trust_rules`]).
pub(crate) const GUARDS: &[Guard] = &[
    Guard::switch("web.allow_private_addresses", true, false, Reason::Sandbox),
    Guard::higher("web.fetch_timeout_ms", FETCH_TIMEOUT_MS, Reason::Limit),
    Guard::higher("web.search.timeout_ms", SEARCH_TIMEOUT_MS, Reason::Limit),
];

/// The web tools.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Fetch private, loopback and link-local addresses too (default false).
    pub allow_private_addresses: Option<bool>,
    /// How long one `web_fetch` may take, in milliseconds (default 30000).
    pub fetch_timeout_ms: Option<u64>,
    pub search: WebSearchConfig,
}

/// Where `web_search` searches.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchConfig {
    /// `native` (the model provider's hosted search: the default on a DeepSeek or Anthropic
    /// route with a key), `searxng` or `brave`; with none, `web_search` is not offered.
    #[serde(deserialize_with = "parsed")]
    pub provider: Option<SearchProvider>,
    /// The backend's API root (required for SearXNG; Brave's public API by default; for
    /// `native`, the provider's Messages API root, derived from the route's base URL).
    pub base_url: Option<String>,
    /// The model that runs a `native` search (DeepSeek: `deepseek-v4-flash`; Anthropic: the
    /// route's model).
    pub model: Option<String>,
    /// The variable holding the key (Brave: `BRAVE_API_KEY` by default).
    pub api_key_env: Option<String>,
    /// How long one `web_search` may take, in milliseconds (default 60000).
    pub timeout_ms: Option<u64>,
}

/// `[web]`: what web_fetch may reach and where web_search searches. A search backend that
/// cannot be used (no key) is not an error of the run: the model is told when it searches.
pub(crate) fn resolve(
    r: &mut Resolver<'_>,
    web: &WebConfig,
    credentials: &Credentials,
    route: &Route,
    sandbox: &super::sandbox::Sandbox,
) -> Result<dsh_web::WebSettings, SetupError> {
    // The web tools connect from dsh itself, where the allowlist's proxy does not stand.
    let confinement = &sandbox.confinement;
    let network = match (confinement.network, &confinement.allowed_domains) {
        (true, _) => dsh_web::WebNetwork::On,
        (false, Some(_)) => dsh_web::WebNetwork::CommandsOnly,
        (false, None) => dsh_web::WebNetwork::Off,
    };
    let allow_private = r.file_setting(
        "web.allow_private_addresses",
        web.allow_private_addresses,
        false,
    );
    let fetch_timeout = r.millis(
        "web.fetch_timeout_ms",
        web.fetch_timeout_ms.map(|ms| ms.max(1)),
        Duration::from_millis(FETCH_TIMEOUT_MS),
    );
    let search_timeout = r.millis(
        "web.search.timeout_ms",
        web.search.timeout_ms.map(|ms| ms.max(1)),
        Duration::from_millis(SEARCH_TIMEOUT_MS),
    );
    // The route's own service searches when it can: no other account or server needed.
    let native = native_service(route).map(|_| SearchProvider::Native);
    let provider = r.file_setting("web.search.provider", web.search.provider.map(Some), native);
    r.none_means(&provider, "none: web_search is not offered");
    let base_url = |default: Option<&str>, r: &mut Resolver<'_>| {
        let url = r.file_setting(
            "web.search.base_url",
            web.search.base_url.clone().map(Some),
            default.map(str::to_owned),
        );
        url.value
    };
    let search = match provider.value {
        None => Err(dsh_web::NO_BACKEND.to_owned()),
        Some(SearchProvider::Native) => native_search(r, web, route),
        Some(SearchProvider::Searxng) => match base_url(None, r) {
            Some(base_url) => Ok(dsh_web::SearchBackend::Searxng { base_url }),
            None => {
                return Err(SetupError::config(
                    "config web.search.base_url: the searxng provider needs the address of a \
                     SearXNG instance whose JSON API is on (search.formats includes json)"
                        .into(),
                ));
            }
        },
        Some(SearchProvider::Brave) => {
            let base_url = base_url(Some("https://api.search.brave.com"), r).unwrap_or_default();
            // The key goes in a header: never over plain http.
            if !base_url.starts_with("https://") {
                return Err(SetupError::config(
                    "config web.search.base_url: the brave provider's key is sent with every \
                     request, so its base URL must be https://"
                        .into(),
                ));
            }
            let env = r.file_setting(
                "web.search.api_key_env",
                web.search.api_key_env.clone(),
                "BRAVE_API_KEY".to_owned(),
            );
            match credentials.get(&env.value) {
                Some((api_key, _)) if !api_key.is_empty() => {
                    Ok(dsh_web::SearchBackend::Brave { base_url, api_key })
                }
                _ => Err(format!(
                    "Brave search has no API key: set {} in the environment (or name another \
                     variable in web.search.api_key_env){}",
                    env.value,
                    (credentials.held_key(&env.value))
                        .map(|held| format!("; {held}"))
                        .unwrap_or_default()
                )),
            }
        }
    };
    Ok(dsh_web::WebSettings {
        network,
        allow_private: allow_private.value,
        fetch_timeout: fetch_timeout.value,
        search,
        search_timeout: search_timeout.value,
    })
}

/// The hosted search of the route's provider, when it has one dsh can use: DeepSeek's and
/// Anthropic's Messages APIs offer a `web_search` server tool.
fn native_service(route: &Route) -> Option<&'static str> {
    match route.kind.value {
        ProviderKind::DeepSeek => Some("DeepSeek"),
        ProviderKind::AnthropicMessages => Some("Anthropic"),
        _ => None,
    }
}

/// `web.search.provider = "native"`: searches through the route's provider, on its key. Its
/// Messages API root is DeepSeek's Anthropic-compatible one (`<route base>/anthropic/v1`) or
/// an Anthropic route's own base URL; `web.search.base_url` and `web.search.model` replace
/// them.
fn native_search(
    r: &mut Resolver<'_>,
    web: &WebConfig,
    route: &Route,
) -> Result<dsh_web::SearchBackend, String> {
    let Some(service) = native_service(route) else {
        return Err(format!(
            "the native search provider searches through the route's own service, which \
             DeepSeek and Anthropic routes have; route \"{}\" is {}: set web.search.provider \
             to searxng or brave",
            route.provider,
            route.kind.value.shown()
        ));
    };
    let route_base = route.base_url.value.trim_end_matches('/');
    let derived = match route.kind.value {
        ProviderKind::DeepSeek => format!("{route_base}/anthropic/v1"),
        _ => route_base.to_owned(),
    };
    let base_url = r
        .file_setting("web.search.base_url", web.search.base_url.clone(), derived)
        .value;
    // The route's key goes with every search: over https, or to this machine only.
    if dsh_protocol::address::check_secret_destination(&base_url).is_err() {
        return Err(format!(
            "web.search.base_url \"{}\" is neither https:// nor on this machine (127.0.0.1, \
             ::1 or localhost, with no user@ part): the native search sends the route's key \
             with every request, so give an https:// address",
            dsh_protocol::shown_url(&base_url)
        ));
    }
    let default_model = match route.kind.value {
        ProviderKind::DeepSeek => "deepseek-v4-flash".to_owned(),
        _ => route.model.clone(),
    };
    let model = r
        .file_setting("web.search.model", web.search.model.clone(), default_model)
        .value;
    let prices = match route.kind.value {
        ProviderKind::DeepSeek => dsh_llm::deepseek::prices(&model),
        _ if model == route.model => route.prices.value,
        _ => None,
    };
    match &route.api_key {
        ApiKey::Found { value, .. } => Ok(dsh_web::SearchBackend::Native(dsh_web::NativeSearch {
            service,
            base_url,
            api_key: value.clone(),
            model,
            prices,
        })),
        ApiKey::NotNeeded => Err(format!(
            "{service} search needs the route's key, and route \"{}\" declares none",
            route.provider
        )),
        ApiKey::Missing { message, .. } => Err(format!("{service} search has no key: {message}")),
    }
}
