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
    // The tool's own description says what the arguments are for.
    out.remove("description");
    let mut v = Value::Object(out);
    compact(&mut v);
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Makes a schema as short as a model can read it without losing a rule:
/// an optional field is its type (not `[type, "null"]`: leaving it out is
/// how a caller says "default"), no `format` annotations, and a choice of
/// constants is an `enum` rather than a `oneOf` of documented constants.
/// Every token of a tool's schema is paid in every prompt of every turn,
/// and a small local model's window is 2,048 tokens.
fn compact(v: &mut Value) {
    match v {
        Value::Object(m) => {
            // `Option<T>` of a named type: `anyOf: [T, null]` is T.
            for key in ["anyOf", "oneOf"] {
                let single = m.get(key).and_then(Value::as_array).and_then(|alts| {
                    let real: Vec<&Value> = alts
                        .iter()
                        .filter(|a| a.get("type") != Some(&Value::String("null".into())))
                        .collect();
                    (real.len() == 1 && alts.len() == 2).then(|| real[0].clone())
                });
                if let Some(Value::Object(inner)) = single {
                    m.remove(key);
                    for (k, v) in inner {
                        // The field's own description says more than its type's.
                        if k != "description" || !m.contains_key("description") {
                            m.insert(k, v);
                        }
                    }
                }
            }
            if let Some(Value::String(d)) = m.get_mut("description") {
                // Doc comments wrap lines; a model needs none of them.
                *d = d.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            if let Some(Value::Array(types)) = m.get("type") {
                let real: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if real.len() == 1 {
                    m.insert("type".into(), real[0].clone());
                }
            }
            m.remove("format");
            if m.get("default") == Some(&Value::Null) {
                m.remove("default");
            }
            for key in ["oneOf", "anyOf"] {
                let consts: Option<Vec<Value>> =
                    m.get(key).and_then(Value::as_array).and_then(|alts| {
                        alts.iter()
                            .filter(|a| {
                                a.get("type") != Some(&Value::String("null".into()))
                                    && a.get("const") != Some(&Value::Null)
                            })
                            .map(|a| a.get("const").cloned())
                            .collect()
                    });
                if let Some(consts) = consts.filter(|c| !c.is_empty()) {
                    m.remove(key);
                    m.insert("type".into(), Value::String("string".into()));
                    m.insert("enum".into(), Value::Array(consts));
                }
            }
            for child in m.values_mut() {
                compact(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(compact),
        _ => {}
    }
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
