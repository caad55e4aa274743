//! Access to `mnemo.toml`.
//!
//! Each crate owns the type of its own section (`[session]`, `[memory]`,
//! `[index]`, `[embedder]`, `[provider]`, …) and reads it with
//! [`Config::section`]; a missing section or field falls back to the type's
//! defaults. Overrides from the environment and flags are applied by the
//! caller with [`Config::set`] before sections are read, so the precedence is
//! flag > environment > file > default.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use toml::{Table, Value};

/// Errors reading configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{path} is not valid TOML: {message}\nfix the file, or move it aside to start from the defaults")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Parser message, with line and column.
        message: String,
    },
    /// A section has a field of the wrong type.
    #[error("bad value in [{section}] (from mnemo.toml, a MNEMO_<SECTION>__<KEY> variable or --set): {message}")]
    Section {
        /// Section name.
        section: String,
        /// What is wrong.
        message: String,
    },
}

impl crate::error::Coded for ConfigError {
    fn code(&self) -> crate::ErrorCode {
        crate::ErrorCode::Config
    }
}

/// The parsed configuration file plus applied overrides.
#[derive(Debug, Clone, Default)]
pub struct Config {
    table: Table,
}

impl Config {
    /// Reads `path`; a missing file gives the empty (all-defaults) config.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text).map_err(|message| ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(ConfigError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Parses TOML text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let table: Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        Ok(Config { table })
    }

    /// Deserialises section `name` into `T`; absent means `T::default()`.
    pub fn section<T: DeserializeOwned + Default>(&self, name: &str) -> Result<T, ConfigError> {
        match self.table.get(name) {
            None => Ok(T::default()),
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::Section {
                    section: name.to_string(),
                    message: e.to_string(),
                }),
        }
    }

    /// Sets `section.key` (dotted path, e.g. `provider.model`) to a value,
    /// overriding the file. Strings that parse as TOML integers, floats or
    /// booleans are stored as such.
    pub fn set(&mut self, dotted: &str, raw: &str) {
        let value = parse_scalar(raw);
        let mut parts: Vec<&str> = dotted.split('.').collect();
        let Some(last) = parts.pop() else { return };
        let mut cur = &mut self.table;
        for p in parts {
            let entry = cur
                .entry(p.to_string())
                .or_insert_with(|| Value::Table(Table::new()));
            if !entry.is_table() {
                *entry = Value::Table(Table::new());
            }
            let Value::Table(t) = entry else { return };
            cur = t;
        }
        cur.insert(last.to_string(), value);
    }

    /// Applies every `MNEMO_<SECTION>__<KEY>` variable from `vars`
    /// (double underscore separates levels), e.g.
    /// `MNEMO_SESSION__FSYNC=always`.
    pub fn apply_env<I, K, V>(&mut self, vars: I)
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        for (k, v) in vars {
            if let Some(rest) = k.as_ref().strip_prefix("MNEMO_") {
                if rest.contains("__") {
                    let dotted = rest.to_ascii_lowercase().replace("__", ".");
                    self.set(&dotted, v.as_ref());
                }
            }
        }
    }

    /// The raw table.
    pub fn table(&self) -> &Table {
        &self.table
    }
}

fn parse_scalar(raw: &str) -> Value {
    if let Ok(i) = raw.parse::<i64>() {
        return Value::Integer(i);
    }
    if let Ok(f) = raw.parse::<f64>() {
        if raw.contains('.') {
            return Value::Float(f);
        }
    }
    match raw {
        "true" => Value::Boolean(true),
        "false" => Value::Boolean(false),
        _ => Value::String(raw.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Session {
        fsync: String,
        max: u64,
    }

    #[test]
    fn precedence_and_defaults() {
        let mut c = Config::parse("[session]\nfsync = \"batch\"\nmax = 3\n").unwrap();
        assert_eq!(
            c.section::<Session>("session").unwrap(),
            Session {
                fsync: "batch".into(),
                max: 3
            }
        );
        c.apply_env([("MNEMO_SESSION__FSYNC", "always"), ("OTHER", "x")]);
        c.set("session.max", "9");
        assert_eq!(
            c.section::<Session>("session").unwrap(),
            Session {
                fsync: "always".into(),
                max: 9
            }
        );
        assert_eq!(c.section::<Session>("absent").unwrap(), Session::default());
    }

    #[test]
    fn wrong_type_names_section() {
        let c = Config::parse("[session]\nmax = \"many\"\n").unwrap();
        let e = c.section::<Session>("session").unwrap_err().to_string();
        assert!(e.contains("[session]"), "{e}");
    }
}
