//! JSON schemas generated from the argument and answer types: inline
//! object schemas for tool inputs, and `$ref`s into one set of named
//! definitions for the OpenAPI document.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value};

/// The object schema of `T`, every subschema inlined, without `$schema`
/// and `title`: what a tool's `inputSchema` (MCP) or `parameters` (the
/// agent's function tools) holds.
pub fn input_schema<T: JsonSchema>() -> Map<String, Value> {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_deserialize()
        .into_generator();
    let mut out = match generator.into_root_schema_for::<T>().to_value() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    out.remove("title");
    out.remove("$schema");
    out
}

/// `schema` with a required string property `key` (the session key) in
/// front: a session tool takes its key beside the body the HTTP API takes
/// under `/v1/sessions/{key}/…`.
pub fn with_key(mut schema: Map<String, Value>) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert(
        "key".into(),
        serde_json::json!({"type": "string", "description": "Session key, e.g. telegram:12345."}),
    );
    if let Some(Value::Object(old)) = schema.remove("properties") {
        props.extend(old);
    }
    schema.insert("properties".into(), Value::Object(props));
    let mut required = vec![Value::String("key".into())];
    if let Some(Value::Array(old)) = schema.remove("required") {
        required.extend(old);
    }
    schema.insert("required".into(), Value::Array(required));
    schema
}

/// A generator whose named types become `#/components/schemas/…`
/// definitions (OpenAPI 3.1 speaks JSON Schema 2020-12).
pub fn components_generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "#/components/schemas/".into();
            s.meta_schema = None;
        })
        .into_generator()
}
