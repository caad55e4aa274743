//! `MemoryIndex` over [`PostgresStore`] on a real server: sync and search,
//! a full rebuild swapped in as a new schema (the old one gone, the
//! vectors carried), the writer lock between two stores, a killed
//! rebuild's schema collected, and an index copied from SQLite without
//! embedding anything again. The database is `MNEMO_TEST_POSTGRES_URL`'s
//! (see mnemo-test-support's `postgres`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo_core::{EmbedError, EmbedKind, Embedder, EmbedderId, Workspace};
use mnemo_embed::HashEmbedder;
use mnemo_index::{IndexSettings, IndexStore, LockWait, MemoryIndex, SearchRequest};
use mnemo_index_postgres::{PostgresBackend, PostgresOptions, PostgresStore};
use mnemo_test_support::postgres::{fresh_schema, test_url};

/// The hash embedder, counting the texts it is asked to embed.
#[derive(Default)]
struct Counting {
    inner: HashEmbedder,
    texts: AtomicUsize,
}

impl Embedder for Counting {
    fn id(&self) -> EmbedderId {
        self.inner.id()
    }
    fn dims(&self) -> usize {
        self.inner.dims()
    }
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        if kind == EmbedKind::Document {
            self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        }
        self.inner.embed(texts, kind)
    }
}

/// A base schema, its generations dropped at the end.
struct Base(PostgresOptions);

impl Drop for Base {
    fn drop(&mut self) {
        for schema in schemas_of(&self.0) {
            let _ = PostgresBackend::drop_schema(&PostgresOptions {
                url: self.0.url.clone(),
                schema,
            });
        }
        let _ = PostgresBackend::drop_schema(&self.0);
    }
}

/// Runs `sql` on the test database and returns the first column of its
/// rows as text.
fn sql(opts: &PostgresOptions, sql: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&opts.url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let rows = client.simple_query(sql).await.unwrap();
        rows.iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            })
            .collect()
    })
}

/// The schemas of the database whose names start with the base's.
fn schemas_of(opts: &PostgresOptions) -> Vec<String> {
    sql(
        opts,
        &format!(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE '{}%' ORDER BY 1",
            opts.schema
        ),
    )
}

/// The base's generations whose word lists were last laid out word by
/// word (CLUSTER marks the index it followed).
fn packed_schemas(opts: &PostgresOptions) -> Vec<String> {
    sql(
        opts,
        &format!(
            "SELECT n.nspname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE i.indisclustered AND c.relname = 'word_lists_pkey' AND n.nspname LIKE '{}_%'",
            opts.schema
        ),
    )
}

fn base() -> Option<Base> {
    Some(Base(PostgresOptions {
        url: test_url()?,
        schema: fresh_schema(),
    }))
}

fn workspace(dir: &Path) -> Workspace {
    let ws = Workspace::new(dir);
    std::fs::create_dir_all(dir.join("memory")).unwrap();
    std::fs::write(
        dir.join("MEMORY.md"),
        "# Memory\n\n- The deploy key lives in the vault under ops/deploy.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("memory/2026-11-03.md"),
        "# 2026-11-03\n\n- Priya moved the standup to 9:15.\n- The build broke with ERR-9081.\n",
    )
    .unwrap();
    ws
}

fn open(ws: &Workspace, opts: &PostgresOptions, embedder: Arc<Counting>) -> MemoryIndex {
    let model = Some((embedder.id(), embedder.dims()));
    let store = PostgresStore::open(opts, model).unwrap();
    MemoryIndex::with_store(
        ws,
        IndexSettings::default(),
        Some(embedder),
        Arc::new(store),
    )
    .unwrap()
}

fn top_path(index: &MemoryIndex, query: &str) -> String {
    let hits = index.search(&SearchRequest::new(query)).unwrap();
    hits.results
        .first()
        .map(|r| r.path.clone())
        .unwrap_or_default()
}

#[test]
fn sync_search_and_a_rebuild_in_a_new_schema() {
    let Some(base) = base() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let embedder = Arc::new(Counting::default());
    let index = open(&ws, &base.0, embedder.clone());

    let report = index.sync(&|_| {}).unwrap();
    assert_eq!(report.indexed.len(), 2, "{report:?}");
    let st = index.status().unwrap();
    assert_eq!(st.backend, "postgres");
    assert!(
        st.location.contains(&format!("{}_1", base.0.schema)),
        "{}",
        st.location
    );
    assert_eq!((st.files, st.vectors), (2, st.chunks));
    assert_eq!(top_path(&index, "ERR-9081"), "memory/2026-11-03.md");
    // The metadata records this store's own schema version (its
    // migrations), not SQLite's.
    let store = PostgresStore::open(&base.0, Some((embedder.id(), embedder.dims()))).unwrap();
    let meta = store.live().unwrap().meta().unwrap();
    assert_eq!(
        meta.get("schema_version"),
        Some(&store.schema_version()),
        "{meta:?}"
    );
    assert_ne!(store.schema_version(), "3");

    // A file edited by hand is found by the next search.
    std::fs::write(
        dir.path().join("memory/2026-11-04.md"),
        "# 2026-11-04\n\n- The quarterly offsite is in Lisbon.\n",
    )
    .unwrap();
    assert_eq!(top_path(&index, "offsite Lisbon"), "memory/2026-11-04.md");

    // A full rebuild fills a new schema, swaps it in and drops the old
    // one; the old generation's vectors come along, so nothing is
    // embedded again.
    let embedded = embedder.texts.load(Ordering::SeqCst);
    let report = index.reindex(true, &|_| {}).unwrap();
    assert!(report.full_rebuild);
    assert_eq!(report.chunks_embedded, 0, "{report:?}");
    assert_eq!(embedder.texts.load(Ordering::SeqCst), embedded);
    let schemas = schemas_of(&base.0);
    assert_eq!(schemas.len(), 2, "the base and one generation: {schemas:?}");
    assert!(
        !schemas.contains(&format!("{}_1", base.0.schema)),
        "{schemas:?}"
    );
    // The new generation's word lists were laid out word by word.
    let clustered = packed_schemas(&base.0);
    assert_eq!(clustered, schemas[1..].to_vec(), "{schemas:?}");
    assert_eq!(top_path(&index, "deploy key vault"), "MEMORY.md");

    // Another process's index over the same schema follows the swap.
    let other = open(&ws, &base.0, Arc::new(Counting::default()));
    assert_eq!(
        other.status().unwrap().location,
        index.status().unwrap().location
    );
    other.reindex(true, &|_| {}).unwrap();
    assert_eq!(top_path(&index, "standup Priya"), "memory/2026-11-03.md");
    assert_eq!(
        index.status().unwrap().location,
        other.status().unwrap().location
    );
}

#[test]
fn the_writer_lock_holds_between_stores_and_dies_with_its_holder() {
    let Some(base) = base() else { return };
    let a = PostgresStore::open(&base.0, None).unwrap();
    let b = PostgresStore::open(&base.0, None).unwrap();
    let held = a.lock(LockWait::Forever).unwrap().expect("free at first");
    let started = Instant::now();
    let refused = b
        .lock(LockWait::Until(Instant::now() + Duration::from_millis(150)))
        .unwrap();
    assert!(refused.is_none(), "two writers at once");
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert!(b.lock_location().contains(&base.0.schema));
    drop(held);
    // The session ends with the lock's connection: free again soon.
    let again = b
        .lock(LockWait::Until(Instant::now() + Duration::from_secs(10)))
        .unwrap();
    assert!(again.is_some(), "released when its holder went");
}

#[test]
fn a_stopped_rebuilds_schema_is_collected_and_a_dropped_one_vanishes() {
    let Some(base) = base() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let index = open(&ws, &base.0, Arc::new(Counting::default()));
    index.sync(&|_| {}).unwrap();
    // What a rebuild killed before its swap leaves: a generation's schema.
    let orphan = format!("{}_42", base.0.schema);
    sql(&base.0, &format!("CREATE SCHEMA \"{orphan}\""));
    assert!(schemas_of(&base.0).contains(&orphan));
    index.reindex(true, &|_| {}).unwrap();
    let schemas = schemas_of(&base.0);
    assert!(!schemas.contains(&orphan), "{schemas:?}");
    assert_eq!(schemas.len(), 2, "{schemas:?}");

    // A generation dropped without its swap takes its schema with it.
    let store = PostgresStore::open(&base.0, None).unwrap();
    let generation = store.new_generation().unwrap();
    assert_eq!(schemas_of(&base.0).len(), 3);
    drop(generation);
    assert_eq!(schemas_of(&base.0).len(), 2);
    assert_eq!(top_path(&index, "ERR-9081"), "memory/2026-11-03.md");
}

#[test]
fn an_index_copied_from_sqlite_embeds_nothing_again_and_ranks_alike() {
    let Some(base) = base() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let embedder = Arc::new(Counting::default());
    let sqlite =
        mnemo_index_sqlite::open(&ws, IndexSettings::default(), Some(embedder.clone())).unwrap();
    sqlite.sync(&|_| {}).unwrap();
    let embedded = embedder.texts.load(Ordering::SeqCst);
    assert!(embedded > 0);

    let pg = open(&ws, &base.0, embedder.clone());
    let pages = std::sync::Mutex::new(Vec::new());
    let copied = sqlite
        .copy_embeddings_to(&pg, &|n| pages.lock().unwrap().push(n))
        .unwrap();
    assert_eq!(copied, sqlite.status().unwrap().chunks);
    assert_eq!(pages.lock().unwrap().last(), Some(&copied));
    let report = pg.sync(&|_| {}).unwrap();
    assert_eq!(report.chunks_embedded, 0, "{report:?}");
    assert_eq!(embedder.texts.load(Ordering::SeqCst), embedded);
    let (s, p) = (sqlite.status().unwrap(), pg.status().unwrap());
    assert_eq!(
        (s.files, s.chunks, s.vectors),
        (p.files, p.chunks, p.vectors)
    );
    for q in ["deploy key", "ERR-9081", "standup moved"] {
        let a = sqlite.search(&SearchRequest::new(q)).unwrap();
        let b = pg.search(&SearchRequest::new(q)).unwrap();
        let lines = |r: &mnemo_index::SearchResponse| {
            r.results
                .iter()
                .map(|h| (h.path.clone(), h.start_line, h.end_line))
                .collect::<Vec<_>>()
        };
        assert_eq!(lines(&a), lines(&b), "{q}");
    }

    // Indexes of two models are not copied into each other.
    let other = Arc::new(Counting {
        inner: HashEmbedder::new(16),
        ..Default::default()
    });
    let base2 = Base(PostgresOptions {
        url: base.0.url.clone(),
        schema: fresh_schema(),
    });
    let pg16 = open(&ws, &base2.0, other);
    let e = sqlite.copy_embeddings_to(&pg16, &|_| {}).unwrap_err();
    assert!(e.to_string().contains("different embedding models"), "{e}");
}

#[test]
fn an_older_schema_gets_the_wider_hnsw_graph_and_keeps_its_vectors() {
    let Some(base) = base() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let index = open(&ws, &base.0, Arc::new(Counting::default()));
    index.sync(&|_| {}).unwrap();
    let live = format!("{}_1", base.0.schema);
    let indexdef = || {
        sql(
            &base.0,
            &format!(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = '{live}' \
                 AND indexname = 'chunk_vectors_hnsw'"
            ),
        )
    };
    let def = indexdef();
    assert!(
        def.len() == 1 && def[0].contains("ef_construction='128'"),
        "{def:?}"
    );
    // The schema as a mnemo before migration 6 left it: pgvector's
    // default graph, version 5.
    sql(
        &base.0,
        &format!(
            "DROP INDEX \"{live}\".chunk_vectors_hnsw; \
             CREATE INDEX chunk_vectors_hnsw ON \"{live}\".chunk_vectors \
             USING hnsw (embedding vector_cosine_ops); \
             UPDATE \"{live}\".mnemo_schema SET version = 5"
        ),
    );
    assert!(
        !indexdef()[0].contains("ef_construction"),
        "{:?}",
        indexdef()
    );
    let vectors = index.status().unwrap().vectors;
    drop(index);

    let embedder = Arc::new(Counting::default());
    let index = open(&ws, &base.0, embedder.clone());
    let def = indexdef();
    assert!(
        def.len() == 1 && def[0].contains("ef_construction='128'"),
        "{def:?}"
    );
    assert_eq!(
        sql(
            &base.0,
            &format!("SELECT version FROM \"{live}\".mnemo_schema")
        ),
        vec!["6".to_string()]
    );
    assert_eq!(index.status().unwrap().vectors, vectors);
    assert_eq!(top_path(&index, "ERR-9081"), "memory/2026-11-03.md");
    assert_eq!(
        embedder.texts.load(Ordering::SeqCst),
        0,
        "nothing embedded again"
    );
}

#[test]
fn a_first_build_leaves_the_word_lists_packed() {
    let Some(base) = base() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let notes = dir.path().join("memory/notes");
    std::fs::create_dir_all(&notes).unwrap();
    for i in 0..1100 {
        std::fs::write(
            notes.join(format!("n{i:04}.md")),
            format!("# Note {i}\n\nThe standup moved to room {i}; ticket ERR-{i}.\n"),
        )
        .unwrap();
    }
    let index = open(&ws, &base.0, Arc::new(Counting::default()));
    let report = index.sync(&|_| {}).unwrap();
    assert!(
        !report.full_rebuild && report.chunks_written >= 1000,
        "{report:?}"
    );
    let clustered = packed_schemas(&base.0);
    assert_eq!(clustered, vec![format!("{}_1", base.0.schema)]);
    assert_eq!(top_path(&index, "ERR-517"), "memory/notes/n0517.md");
}

/// Issue 43 N12: an index made before is opened and searched in a
/// read-only database (a standby, a database made read-only): opening it
/// runs no DDL, which PostgreSQL refuses there even as `IF NOT EXISTS`.
#[test]
fn an_index_is_searched_in_a_read_only_database() {
    let Some(base) = base() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let index = open(&ws, &base.0, Arc::new(Counting::default()));
    index.sync(&|_| {}).unwrap();
    drop(index);

    let sep = if base.0.url.contains('?') { '&' } else { '?' };
    let read_only = PostgresOptions {
        url: format!(
            "{}{sep}options=-c%20default_transaction_read_only%3Don",
            base.0.url
        ),
        schema: base.0.schema.clone(),
    };
    let index = open(&ws, &read_only, Arc::new(Counting::default()));
    assert_eq!(top_path(&index, "ERR-9081"), "memory/2026-11-03.md");
}

/// Issue 43 N12: an index dropped under an open one (its workspace
/// deleted through another server) is the database's state, not a bug:
/// `io`, with advice a tenant can follow, never `internal` with
/// `mnemo index --force`.
#[test]
fn an_index_dropped_under_a_search_is_io() {
    let Some(base) = base() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let index = open(&ws, &base.0, Arc::new(Counting::default()));
    index.sync(&|_| {}).unwrap();

    PostgresStore::drop_index(&base.0).unwrap();
    let err = index.search(&SearchRequest::new("ERR-9081")).unwrap_err();
    assert_eq!(err.code(), mnemo_core::ErrorCode::Io, "{err}");
    assert!(!err.to_string().contains("index --force"), "{err}");
}

/// Two servers opening one new workspace's index at the same moment (its
/// first search, sent to both): every opener waits for the one that
/// creates the base schema, then reads what it made. A waiter once
/// checked for the schema with the catalog as it was before its wait,
/// tried to create it again and failed with a duplicate key, `internal`.
/// Each opener here has a connection of its own, as two servers do; many
/// rounds, each a new index, since the race is not lost every time.
#[test]
fn openers_of_one_new_index_at_once_all_open_it() {
    const OPENERS: usize = 6;
    const ROUNDS: usize = 25;
    let Some(url) = test_url() else { return };
    for round in 0..ROUNDS {
        let base = Base(PostgresOptions {
            url: url.clone(),
            schema: fresh_schema(),
        });
        let start = Arc::new(std::sync::Barrier::new(OPENERS));
        let openers: Vec<_> = (0..OPENERS)
            .map(|_| {
                let (opts, start) = (base.0.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    PostgresStore::open(&opts, None).and_then(|s| s.live_schema())
                })
            })
            .collect();
        for opener in openers {
            let live = opener.join().unwrap();
            match live {
                Ok(live) => assert_eq!(live, format!("{}_1", base.0.schema)),
                Err(e) => panic!("round {round}: an opener failed: {e}"),
            }
        }
    }
}
