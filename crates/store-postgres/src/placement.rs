//! Placement: which database server holds a workspace's rows. The
//! registry's database (the one `mnemo serve --database` names) lists the
//! other servers (`servers`: a name and a URL) and, in each tenant's row,
//! the server its rows are on (`server`, NULL for the registry's own).
//! A server that holds a workspace placed by a registry elsewhere keeps a
//! row of its own for it ([`Database::adopt`]): the row every statement of
//! that workspace checks, so that once the workspace moves away
//! (a move) its old copy answers nothing.

use mnemo_store::{Error, Result};

use crate::{db_err, failed, schema, Database, Tenant};

/// The name the registry's own database goes by in placement answers and
/// move requests; no listed server may take it.
pub const HOME: &str = "home";

/// A database server the registry places workspaces on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    /// Its name, as workspaces' placement names it.
    pub name: String,
    /// Its URL (`postgres://…`), with the same schema as the registry's.
    pub url: String,
}

impl ServerEntry {
    /// Where it is, without a password.
    pub fn location(&self) -> String {
        mnemo_postgres::Target::parse(&self.url)
            .map(|t| t.location().to_string())
            .unwrap_or_else(|_| "(an unreadable URL)".into())
    }
}

/// True for a name a server may have: 1 to 32 lower-case letters, digits,
/// `-` and `_`, and not [`HOME`].
pub fn valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name != HOME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_'))
}

impl Database {
    /// The database servers this registry places workspaces on, by name
    /// (the registry's own database is not listed: it is [`HOME`]).
    pub fn servers(&self) -> Result<Vec<ServerEntry>> {
        self.call(|c, loc| {
            Box::pin(async move {
                let rows = c
                    .query("SELECT name, url FROM servers ORDER BY name", &[])
                    .await
                    .map_err(db_err(&loc))?;
                Ok(rows
                    .iter()
                    .map(|r| ServerEntry {
                        name: r.get(0),
                        url: r.get(1),
                    })
                    .collect())
            })
        })
    }

    /// Lists the server `name` at `url` (or changes its URL).
    pub fn add_server(&self, name: &str, url: &str) -> Result<()> {
        if !valid_server_name(name) {
            return Err(Error::Invalid(format!(
                "{name:?} cannot name a database server: use 1 to 32 lower-case letters, \
                 digits, `-` and `_`, and not {HOME:?} (the registry's own database)"
            )));
        }
        mnemo_postgres::Target::parse(url).map_err(Error::Invalid)?;
        let (name, url) = (name.to_string(), url.to_string());
        self.call(move |c, loc| {
            Box::pin(async move {
                c.execute(
                    "INSERT INTO servers (name, url) VALUES ($1, $2) \
                     ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url",
                    &[&name, &url],
                )
                .await
                .map_err(db_err(&loc))?;
                Ok(())
            })
        })
    }

    /// Takes the server `name` off the list; refused while a workspace is
    /// placed on it.
    pub fn remove_server(&self, name: &str) -> Result<bool> {
        let name = name.to_string();
        self.call(move |c, loc| {
            Box::pin(async move {
                let held: i64 = c
                    .query_one("SELECT count(*) FROM tenants WHERE server = $1", &[&name])
                    .await
                    .map_err(db_err(&loc))?
                    .get(0);
                if held > 0 {
                    let what = match held {
                        1 => "1 workspace is".to_string(),
                        n => format!("{n} workspaces are"),
                    };
                    return Err(Error::Refused(format!(
                        "{what} placed on the server {name:?}: move them first \
                         (`mnemo servers move ID --to SERVER`)"
                    )));
                }
                Ok(c.execute("DELETE FROM servers WHERE name = $1", &[&name])
                    .await
                    .map_err(db_err(&loc))?
                    > 0)
            })
        })
    }

    /// How many workspaces each server holds, the registry's own database
    /// as [`HOME`] and every listed server included (0 when it holds none).
    pub fn placement_counts(&self) -> Result<Vec<(String, i64)>> {
        self.call(|c, loc| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "SELECT n.name, count(t.workspace) FROM \
                         (SELECT $1::text AS name UNION ALL SELECT name FROM servers) n \
                         LEFT JOIN tenants t ON COALESCE(t.server, $1) = n.name \
                         GROUP BY n.name ORDER BY n.name",
                        &[&HOME],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
            })
        })
    }

    /// True when this database holds registration `seq` of workspace
    /// `id`: its rows are here and not moved away.
    pub fn holds(&self, id: &str, seq: i64) -> Result<bool> {
        let id = id.to_string();
        self.call(move |c, loc| {
            Box::pin(async move {
                Ok(c.query_opt(
                    "SELECT 1 FROM tenants WHERE workspace = $1 AND seq = $2 AND server IS NULL",
                    &[&id, &seq],
                )
                .await
                .map_err(db_err(&loc))?
                .is_some())
            })
        })
    }

    /// Removes the mark a move left here for registration `seq` of
    /// workspace `id` (its rows went with the move); true when there was one.
    pub fn drop_moved_mark(&self, id: &str, seq: i64) -> Result<bool> {
        let id = id.to_string();
        self.call(move |c, loc| {
            Box::pin(async move {
                Ok(c.execute(
                    "DELETE FROM tenants WHERE workspace = $1 AND seq = $2 AND server IS NOT NULL",
                    &[&id, &seq],
                )
                .await
                .map_err(db_err(&loc))?
                    > 0)
            })
        })
    }

    /// Takes in tenant `t`, registered by a registry elsewhere, as held
    /// here: its row in this database (the registry's number, so locks
    /// and index schemas agree) is what its statements check. Rows a
    /// move left here before are removed first.
    pub fn adopt(&self, t: &Tenant) -> Result<()> {
        let t = t.clone();
        self.call(move |c, loc| {
            Box::pin(async move {
                c.batch_execute("BEGIN").await.map_err(db_err(&loc))?;
                let done = async {
                    for table in schema::TABLES {
                        c.execute(
                            &format!("DELETE FROM {table} WHERE workspace = $1"),
                            &[&t.id],
                        )
                        .await
                        .map_err(db_err(&loc))?;
                    }
                    c.execute(
                        "INSERT INTO tenants (workspace, token_sha256, seq, created, server) \
                         OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, NULL)",
                        &[&t.id, &t.token_sha256, &t.seq, &t.created],
                    )
                    .await
                    .map_err(|e| {
                        failed(
                            &loc,
                            format!(
                                "cannot hold the workspace {:?} here: {} (is this database \
                                 another registry's? a server holds only the workspaces one \
                                 registry places)",
                                t.id,
                                mnemo_postgres::describe(&e)
                            ),
                        )
                    })?;
                    Ok::<_, Error>(())
                }
                .await;
                match done {
                    Ok(()) => {
                        c.batch_execute("COMMIT").await.map_err(db_err(&loc))?;
                        Ok(())
                    }
                    Err(e) => {
                        let _ = c.batch_execute("ROLLBACK").await;
                        Err(e)
                    }
                }
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names() {
        for ok in ["b", "pg-2", "eu_west_1"] {
            assert!(valid_server_name(ok), "{ok}");
        }
        for bad in ["", "home", "B", "a b", "a/b", &"x".repeat(33)] {
            assert!(!valid_server_name(bad), "{bad:?}");
        }
    }
}
