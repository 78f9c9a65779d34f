use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

/// The published schema of the `--json` events.
pub fn events_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::from_str(include_str!("../../../docs/events.schema.json"))
            .expect("docs/events.schema.json is JSON")
    })
}

/// Panics with every violation if `event` does not match the published schema.
pub fn check_event(event: &Value) {
    check(event, "");
}

/// Panics with every violation if `output` does not match the definition `name` of the
/// published schema: one of the listing commands' `--json` outputs (`sessionSummary`,
/// `logLine`, `rewindTurns`, `rewindReport`, `mcpServers`), which are not events.
pub fn check_output(name: &str, output: &Value) {
    check(output, name);
}

/// Checks `value` against the schema's root (`""`) or the definition `name`; the root and
/// every definition are compiled once.
fn check(value: &Value, name: &str) {
    type Compiled = (boon::Schemas, HashMap<String, boon::SchemaIndex>);
    static SCHEMAS: OnceLock<Compiled> = OnceLock::new();
    let (schemas, indexes) = SCHEMAS.get_or_init(|| {
        let url = "urn:dsh:events-schema";
        let mut compiler = boon::Compiler::new();
        let mut schemas = boon::Schemas::new();
        compiler
            .add_resource(url, events_schema().clone())
            .expect("the schema's name is a URL");
        let defs = (events_schema()["$defs"].as_object())
            .map(|defs| defs.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        let mut indexes = HashMap::new();
        for name in std::iter::once(String::new()).chain(defs) {
            let at = if name.is_empty() {
                url.to_owned()
            } else {
                format!("{url}#/$defs/{name}")
            };
            let index = (compiler.compile(&at, &mut schemas)).unwrap_or_else(|e| {
                panic!("docs/events.schema.json {name} is not a schema: {e:#}")
            });
            indexes.insert(name, index);
        }
        (schemas, indexes)
    });
    let index =
        (indexes.get(name)).unwrap_or_else(|| panic!("docs/events.schema.json defines no {name}"));
    if let Err(error) = schemas.validate(value, *index) {
        let what = if name.is_empty() { "an event" } else { name };
        panic!("{value} does not match docs/events.schema.json ({what}): {error:#}");
    }
}

/// The published schema of `dsh app-server`'s protocol (`docs/sdk.schema.json`), which refers
/// to the events' schema for the events it carries.
pub fn sdk_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        serde_json::from_str(include_str!("../../../docs/sdk.schema.json"))
            .expect("docs/sdk.schema.json is JSON")
    })
}

/// Panics with every violation if `line`, written by `dsh app-server`, does not match
/// `docs/sdk.schema.json` (or, for `"clientMessage"`, is not a message a client may send).
pub fn check_sdk_line(line: &Value, definition: Option<&str>) {
    type Compiled = (boon::Schemas, boon::SchemaIndex, boon::SchemaIndex);
    static SCHEMAS: OnceLock<Compiled> = OnceLock::new();
    let (schemas, server, client) = SCHEMAS.get_or_init(|| {
        let url = sdk_schema()["$id"].as_str().expect("the schema has an $id");
        let events_url = events_schema()["$id"]
            .as_str()
            .expect("the schema has an $id");
        let mut compiler = boon::Compiler::new();
        let mut schemas = boon::Schemas::new();
        for (at, schema) in [(url, sdk_schema()), (events_url, events_schema())] {
            compiler
                .add_resource(at, schema.clone())
                .expect("the schema's name is a URL");
        }
        let mut compile = |at: String| {
            (compiler.compile(&at, &mut schemas))
                .unwrap_or_else(|e| panic!("docs/sdk.schema.json {at} is not a schema: {e:#}"))
        };
        let server = compile(url.to_owned());
        let client = compile(format!("{url}#/$defs/clientMessage"));
        (schemas, server, client)
    });
    let index = match definition {
        None => server,
        Some("clientMessage") => client,
        Some(other) => panic!("check_sdk_line checks no {other}"),
    };
    if let Err(error) = schemas.validate(line, *index) {
        panic!("{line} does not match docs/sdk.schema.json: {error:#}");
    }
}
