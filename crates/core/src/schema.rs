//! The one rule for the database schema names mnemo creates (the store's,
//! each workspace's index and its generations): plain SQL identifiers that
//! need no quoting anywhere and cannot collide with the server's own.

/// True for a schema name mnemo may create: lower-case ASCII letters,
/// digits and `_`, not starting with a digit, not PostgreSQL's reserved
/// `pg_` prefix, within PostgreSQL's 63 bytes. A backend may narrow it
/// (the index keeps room for its generations' `_<n>` suffix).
pub fn valid_schema_name(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !name.starts_with("pg_")
}

#[cfg(test)]
mod tests {
    use super::valid_schema_name;

    #[test]
    fn plain_identifiers_only() {
        for ok in ["mnemo_store", "ws_1", "_x", "a"] {
            assert!(valid_schema_name(ok), "{ok}");
        }
        let long = "a".repeat(64);
        for bad in [
            "",
            "1ws",
            "pg_catalog",
            "Mnemo",
            "a-b",
            "a b",
            "é",
            long.as_str(),
        ] {
            assert!(!valid_schema_name(bad), "{bad}");
        }
    }
}
