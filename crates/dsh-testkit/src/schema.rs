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
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        jsonschema::validator_for(events_schema()).expect("docs/events.schema.json is a schema")
    });
    let errors: Vec<String> = validator
        .iter_errors(event)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "event {event} does not match docs/events.schema.json: {errors:#?}"
    );
}
