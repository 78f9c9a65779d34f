//! dsh's web tools.
//!
//! [`WebFetch`] (`web_fetch`) reads one http(s) page and gives it to the model as markdown (HTML
//! is converted with `htmd`, a port of the turndown converter the reference uses) or as text,
//! within caps on bytes, characters and lines. It refuses private, loopback and link-local
//! addresses unless the configuration allows them, checks every redirect hop the same way, and
//! connects to the very address it checked (directly: never through a proxy, which would look
//! the name up again). [`WebSearch`] (`web_search`) asks the configured
//! [`SearchBackend`] and lists what it found as the reference does. Both respect the sandbox's
//! network switch: with the network off a call needs an approved exception.
//!
//! Model-facing texts (error messages, the result layout) are the reference's where it has
//! them.

mod access;
mod address;
mod fetch;
mod search;

use std::sync::Arc;

pub use access::{NO_BACKEND, NativeSearch, SearchBackend, WebNetwork, WebSettings};
pub use fetch::WebFetch;
pub use search::WebSearch;

/// The two web tools over the same settings.
pub fn tools(settings: WebSettings) -> (WebFetch, WebSearch) {
    let settings = Arc::new(settings);
    (WebFetch::new(settings.clone()), WebSearch::new(settings))
}
