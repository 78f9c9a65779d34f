//! The model's client for a route: the settings resolve which server a model reference goes
//! to and what is known of the model there ([`Route`]); core makes the `dsh-llm` client that
//! talks to it.

use std::sync::Arc;
use std::time::Duration;

use dsh_llm::{ChatDialect, EndpointConfig, Provider, WireFormat};

use crate::config::{ApiKey, ProviderKind, Route, SetupError, Source, SystemRole};

/// The client for `route`, pricing each request when the model has prices; fails when the
/// route's key is missing.
pub(crate) fn connect(
    route: &Route,
    idle_timeout: Duration,
) -> Result<Arc<dyn Provider>, SetupError> {
    let (api_key, api_key_env) = match &route.api_key {
        ApiKey::NotNeeded => (None, format!("providers.{}.api_key_env", route.provider)),
        ApiKey::Found { env, value, .. } => (Some(value.clone()), env.clone()),
        ApiKey::Missing { message, .. } => {
            return Err(SetupError::new("AUTH", message.clone()));
        }
    };
    refuse_two_credentials(route, api_key.is_some(), &api_key_env)?;
    let (endpoint, format) = endpoint(route, api_key, api_key_env, idle_timeout);
    let provider = dsh_llm::connect(endpoint, format)
        .map_err(|failure| SetupError::new(failure.code.as_str(), failure.message))?;
    Ok(match route.prices.value {
        Some(prices) => Arc::new(dsh_llm::Priced::new(provider, prices)),
        None => provider,
    })
}

/// Refuses a route whose address holds credentials (`user:password@`) beside its key: the
/// HTTP client would send the address's as the one Authorization header, in place of the key,
/// so the key the user set would silently never be sent.
fn refuse_two_credentials(
    route: &Route,
    keyed: bool,
    key_variable: &str,
) -> Result<(), SetupError> {
    let address = &route.base_url.value;
    let userinfo = !dsh_protocol::address::user_part(address).is_empty();
    if keyed && userinfo {
        return Err(SetupError::new(
            "CONFIG",
            format!(
                "the address of provider {} ({}) holds credentials and the provider has a key \
                 ({key_variable}): only one can be sent\nhint: take the credentials out of the \
                 address, or send them as a header in providers.{}.headers",
                route.provider,
                dsh_protocol::address::shown_url(address),
                route.provider
            ),
        ));
    }
    Ok(())
}

/// Whether `route`'s server takes `key` ([`dsh_llm::check_key`]: nothing is billed).
pub(crate) async fn check_key(route: &Route, key: &str) -> Result<(), dsh_protocol::Failure> {
    let (endpoint, format) = endpoint(
        route,
        Some(key.to_owned()),
        "the key given".to_owned(),
        Duration::from_secs(30),
    );
    dsh_llm::check_key(endpoint, format).await
}

/// Where `route`'s requests go and in which wire format.
fn endpoint(
    route: &Route,
    api_key: Option<String>,
    api_key_env: String,
    idle_timeout: Duration,
) -> (EndpointConfig, WireFormat) {
    let base_url_source = match route.base_url.source {
        Source::Env(name) => name.to_owned(),
        _ => format!("providers.{}.base_url", route.provider),
    };
    let endpoint = EndpointConfig {
        name: route.provider.clone(),
        base_url: route.base_url.value.clone(),
        api_key,
        api_key_env,
        base_url_source,
        idle_timeout,
        headers: route.headers.clone(),
    };
    let effort = route.reasoning_effort.value;
    let format = match route.kind.value {
        ProviderKind::DeepSeek => WireFormat::ChatCompletions(ChatDialect::DeepSeek),
        ProviderKind::OpenAiCompletions => WireFormat::ChatCompletions(ChatDialect::OpenAi {
            reasoning_effort: effort,
            developer_role: route.system_role.value == SystemRole::Developer,
        }),
        ProviderKind::OpenAiResponses => WireFormat::OpenAiResponses {
            reasoning_effort: effort,
        },
        ProviderKind::AnthropicMessages => WireFormat::AnthropicMessages { thinking: effort },
    };
    (endpoint, format)
}
