//! The store's tables and their versioned migrations. `store_version`
//! holds the version this schema is at; each migration runs once, in a
//! transaction, under an advisory lock, so servers starting together
//! migrate once. A schema written by a newer mnemo is refused, never
//! changed.

use mnemo_store::{Error, Result};
use tokio_postgres::Client;

use crate::{db_err, failed};

/// The tables that hold a workspace's rows (each leads with `workspace`).
/// The registration goes last, so that a delete cut short leaves the
/// workspace registered and can be run again.
pub(crate) const TABLES: [&str; 4] = ["session_lines", "sessions", "documents", "tenants"];

/// The SQLSTATE `held_here` raises for a workspace that moved away.
pub(crate) const MOVED_SQLSTATE: &str = "MN001";

/// The migrations, in order: migration `i` brings the schema to `i + 1`.
const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE documents (
        workspace text NOT NULL,
        path text NOT NULL,
        body bytea NOT NULL,
        version bigint NOT NULL,
        modified timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace, path)
    );
    CREATE TABLE sessions (
        workspace text NOT NULL,
        key text NOT NULL,
        stem text NOT NULL,
        lines bigint NOT NULL DEFAULT 0,
        bytes bigint NOT NULL DEFAULT 0,
        version bigint NOT NULL DEFAULT 0,
        created timestamptz NOT NULL DEFAULT now(),
        updated timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace, key)
    );
    CREATE UNIQUE INDEX sessions_stem ON sessions (workspace, stem);
    CREATE TABLE session_lines (
        workspace text NOT NULL,
        key text NOT NULL,
        seq bigint NOT NULL,
        line bytea NOT NULL,
        PRIMARY KEY (workspace, key, seq)
    );
",
    "
    CREATE TABLE tenants (
        workspace text PRIMARY KEY,
        token_sha256 bytea NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        created timestamptz NOT NULL DEFAULT now()
    );
",
    // Placement: a registry row whose `server` is set names the server that
    // holds the workspace's rows (NULL: this database). On a server that
    // holds workspaces placed by another database's registry, a row with
    // `server` set marks a workspace moved away: its old copy answers
    // nothing. `servers` lists the database servers a registry places on.
    "
    ALTER TABLE tenants ADD COLUMN server text;
    CREATE TABLE servers (
        name text PRIMARY KEY,
        url text NOT NULL,
        added timestamptz NOT NULL DEFAULT now()
    );
",
    // `held_here` is the fence of every read (crate::registered): true
    // while the registration's rows are here, false once it is deleted,
    // and an error (MOVED_SQLSTATE, the new server as its detail) once it
    // moved, so that an old copy never answers "nothing".
    "
    CREATE OR REPLACE FUNCTION held_here(ws text, reg bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $f$
    DECLARE
        moved_to text;
    BEGIN
        SELECT server INTO moved_to FROM tenants WHERE workspace = ws AND seq = reg;
        IF NOT FOUND THEN
            RETURN false;
        END IF;
        IF moved_to IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'MN001', MESSAGE = ws, DETAIL = moved_to;
        END IF;
        RETURN true;
    END
    $f$;
",
];

/// Creates `schema` and brings it to the newest version.
pub(crate) async fn migrate(c: &Client, schema: &str, loc: &str) -> Result<()> {
    let key = mnemo_postgres::lock_key(&["mnemo-store-migrate", schema]);
    c.execute("SELECT pg_advisory_lock($1)", &[&key])
        .await
        .map_err(db_err(loc))?;
    let result = run(c, schema, loc).await;
    let _ = c.execute("SELECT pg_advisory_unlock($1)", &[&key]).await;
    result
}

async fn run(c: &Client, schema: &str, loc: &str) -> Result<()> {
    // No DDL when the schema is there: a read-only database still serves.
    let exists: bool = c
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{schema}.store_version")],
        )
        .await
        .map_err(db_err(loc))?
        .get(0);
    if !exists {
        c.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {schema};
             CREATE TABLE IF NOT EXISTS {schema}.store_version (version integer NOT NULL);"
        ))
        .await
        .map_err(db_err(loc))?;
    }
    let row = c
        .query_opt(&format!("SELECT version FROM {schema}.store_version"), &[])
        .await
        .map_err(db_err(loc))?;
    let at = row.map_or(0, |r| r.get::<_, i32>(0));
    let newest = i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX);
    if at > newest {
        return Err(failed(
            loc,
            format!(
                "the schema {schema} was written by a newer mnemo (version {at}; this one knows {newest}): \
                 upgrade mnemo, or use another schema"
            ),
        ));
    }
    for (i, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .skip(usize::try_from(at).unwrap_or(0))
    {
        let to = i32::try_from(i + 1).unwrap_or(i32::MAX);
        let step = format!(
            "BEGIN; SET LOCAL search_path TO {schema}; {sql};
             DELETE FROM store_version; INSERT INTO store_version VALUES ({to}); COMMIT;"
        );
        if let Err(e) = c.batch_execute(&step).await {
            let _ = c.batch_execute("ROLLBACK").await;
            return Err(Error::Storage {
                location: loc.to_string(),
                message: format!(
                    "migrating the schema {schema} to version {to} failed: {}",
                    mnemo_postgres::describe(&e)
                ),
            });
        }
    }
    Ok(())
}
