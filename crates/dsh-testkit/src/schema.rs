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
    static SCHEMA: OnceLock<(boon::Schemas, boon::SchemaIndex)> = OnceLock::new();
    let (schemas, root) = SCHEMA.get_or_init(|| {
        let mut compiler = boon::Compiler::new();
        let mut schemas = boon::Schemas::new();
        let url = "urn:dsh:events-schema";
        compiler
            .add_resource(url, events_schema().clone())
            .expect("the schema's name is a URL");
        let root = (compiler.compile(url, &mut schemas))
            .unwrap_or_else(|e| panic!("docs/events.schema.json is not a schema: {e:#}"));
        (schemas, root)
    });
    if let Err(error) = schemas.validate(event, *root) {
        panic!("event {event} does not match docs/events.schema.json: {error:#}");
    }
}
