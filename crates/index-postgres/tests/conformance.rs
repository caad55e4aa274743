//! The `IndexBackend` conformance suite (mnemo-test-support) on the
//! PostgreSQL backend, and what only a server backend can get wrong: a
//! fresh schema per scenario in the database of `MNEMO_TEST_POSTGRES_URL`
//! (`scripts/postgres.sh start` prints one). Without the variable the tests
//! pass with a note, except in CI (`CI` set), where they fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::EmbedderId;
use mnemo_index::backend::{FileRecord, NewChunk};
use mnemo_index::{IndexBackend, Source};
use mnemo_index_postgres::{PostgresBackend, PostgresOptions};
use mnemo_test_support::conformance::index::{IndexCase, DIMS};

use mnemo_test_support::postgres::{fresh_schema, test_url};

fn model(name: &str) -> EmbedderId {
    EmbedderId {
        provider: "suite".into(),
        model: name.into(),
        provider_key: "k".into(),
    }
}

/// Drops its schema when the case ends.
struct Schema(PostgresOptions);

impl Drop for Schema {
    fn drop(&mut self) {
        let _ = PostgresBackend::drop_schema(&self.0);
    }
}

fn options() -> Option<PostgresOptions> {
    let url = test_url()?;
    Some(PostgresOptions {
        url,
        schema: fresh_schema(),
    })
}

fn pg_case() -> Option<IndexCase> {
    let opts = options()?;
    let backend = PostgresBackend::open(&opts, Some((model("suite-vectors"), DIMS))).unwrap();
    Some(IndexCase {
        backend: Box::new(backend),
        _keep: Box::new(Schema(opts)),
    })
}

mnemo_test_support::index_backend_suite!(postgres, pg_case);

fn chunk(text: &str) -> NewChunk {
    NewChunk {
        start_line: 1,
        end_line: 1,
        // One hash per text, as a sha256 is: a backend keeps a stored
        // chunk whose hash and place a new one has.
        hash: text.bytes().map(|b| format!("{b:02x}")).collect(),
        text: text.into(),
        tokens: text.to_lowercase(),
        messages: None,
        parts: Vec::new(),
        days: None,
    }
}

fn file(path: &str) -> FileRecord {
    FileRecord {
        path: path.into(),
        source: Source::Memory,
        hash: "h".into(),
        mtime_ms: 1,
        size: 1,
        embedded: true,
        session_key: None,
    }
}

/// Runs `sql` (statements separated by "; ") on the server, for what the
/// backend has no method for.
fn admin(url: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        // One at a time: CREATE DATABASE may not run in the implicit
        // transaction of a batch.
        for statement in sql.split("; ") {
            c.batch_execute(statement).await.unwrap();
        }
    });
}

#[test]
fn an_unreachable_database_is_named_without_its_password() {
    let opts = PostgresOptions::new("postgres://mnemo:hunter2secret@127.0.0.1:1/mnemo");
    let e = PostgresBackend::open(&opts, None).unwrap_err().to_string();
    assert!(e.contains("postgres://mnemo@127.0.0.1:1/mnemo"), "{e}");
    assert!(e.contains("cannot connect"), "{e}");
    assert!(!e.contains("hunter2secret"), "{e}");
}

#[test]
fn a_schema_from_a_newer_mnemo_is_refused() {
    let Some(opts) = options() else { return };
    let _keep = Schema(opts.clone());
    drop(PostgresBackend::open(&opts, None).unwrap());
    admin(
        &opts.url,
        &format!("UPDATE \"{}\".mnemo_schema SET version = 999", opts.schema),
    );
    let e = PostgresBackend::open(&opts, None).unwrap_err().to_string();
    assert!(
        e.contains("version 999") && e.contains("newer mnemo"),
        "{e}"
    );
}

#[test]
fn a_database_without_pgvector_is_refused() {
    let Some(opts) = options() else { return };
    // A database whose owner may not create the extension (pgvector is
    // not a trusted extension: only a superuser may).
    let name = format!("{}_novec", opts.schema);
    admin(
        &opts.url,
        &format!("CREATE ROLE {name} LOGIN; CREATE DATABASE {name} OWNER {name}"),
    );
    let mut url = url_with_db(&opts.url, &name);
    url = url.replacen("postgres://postgres@", &format!("postgres://{name}@"), 1);
    let e = PostgresBackend::open(&PostgresOptions::new(url), None)
        .unwrap_err()
        .to_string();
    admin(
        &opts.url,
        &format!("DROP DATABASE {name}; DROP ROLE {name}"),
    );
    assert!(e.contains("no `vector` extension"), "{e}");
}

/// `url` with its database replaced by `db`.
fn url_with_db(url: &str, db: &str) -> String {
    let base = url.split('?').next().unwrap();
    let at = base.rfind('/').unwrap();
    format!("{}/{db}", &base[..at])
}

#[test]
fn another_model_never_mixes_its_vectors_with_the_first() {
    let Some(opts) = options() else { return };
    let _keep = Schema(opts.clone());
    let first = PostgresBackend::open(&opts, Some((model("a"), 4))).unwrap();
    let c = chunk("alpha bravo");
    first
        .upsert_file(
            &file("memory/a.md"),
            std::slice::from_ref(&c),
            Some(&[vec![1.0, 0.0, 0.0, 0.0]]),
        )
        .unwrap();
    assert_eq!(first.counts().unwrap().vectors, 1);
    // Another model of another dimension: none of the first's vectors.
    let second = PostgresBackend::open(&opts, Some((model("b"), 3))).unwrap();
    assert_eq!(second.counts().unwrap().vectors, 0);
    assert!(second
        .vector_search(&[1.0, 0.0, 0.0], 5, &[])
        .unwrap()
        .is_empty());
    assert!(second.cached_embeddings(&[&c.hash]).unwrap().is_empty());
    // The first, still open, is told rather than writing into the second's.
    let e = first
        .upsert_file(
            &file("memory/b.md"),
            &[chunk("charlie")],
            Some(&[vec![0.0, 1.0, 0.0, 0.0]]),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("never mixed"), "{e}");
    // Back to the first model: its vectors come back from the cache.
    let again = PostgresBackend::open(&opts, Some((model("a"), 4))).unwrap();
    assert_eq!(again.counts().unwrap().vectors, 1);
    let hits = again.vector_search(&[1.0, 0.0, 0.0, 0.0], 5, &[]).unwrap();
    assert_eq!(hits.len(), 1);
    assert!((hits[0].1 - 1.0).abs() < 1e-6);
}

#[test]
fn two_writers_at_once_neither_duplicate_nor_lose_chunks() {
    let Some(opts) = options() else { return };
    let _keep = Schema(opts.clone());
    let a = PostgresBackend::open(&opts, Some((model("w"), 2))).unwrap();
    let b = PostgresBackend::open(&opts, Some((model("w"), 2))).unwrap();
    let write = |backend: &PostgresBackend, round: usize| {
        for i in 0..20 {
            // Both write the same paths, with another number of chunks each
            // round, so a lost delete or a doubled insert shows.
            let n = 1 + (i + round) % 4;
            let chunks: Vec<NewChunk> = (0..n)
                .map(|j| chunk(&format!("file{i} part{j} round{round}")))
                .collect();
            let vectors: Vec<Vec<f32>> = (0..n).map(|j| vec![1.0, j as f32]).collect();
            backend
                .upsert_file(&file(&format!("memory/f{i}.md")), &chunks, Some(&vectors))
                .unwrap();
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| write(&a, 1));
        s.spawn(|| write(&b, 2));
    });
    // Whichever wrote a file last, its chunks are the file's whole set.
    let counts = a.counts().unwrap();
    assert_eq!(counts.files, 20);
    let mut total = 0;
    for i in 0..20 {
        let ids: Vec<i64> = a
            .keyword_search(&[format!("file{i}")], 100, &[])
            .unwrap()
            .into_iter()
            .map(|h| h.0)
            .collect();
        let read = a.chunks(&ids).unwrap();
        let rounds: std::collections::HashSet<&str> = read
            .iter()
            .map(|c| c.text.rsplit(' ').next().unwrap())
            .collect();
        assert_eq!(rounds.len(), 1, "file{i} mixes rounds: {read:?}");
        let round: usize = rounds.iter().next().unwrap()[5..].parse().unwrap();
        assert_eq!(read.len(), 1 + (i + round) % 4, "file{i}");
        total += read.len();
    }
    assert_eq!((counts.chunks, counts.vectors), (total, total));
}

#[test]
fn the_backend_works_from_inside_a_tokio_runtime() {
    let Some(case) = pg_case() else { return };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let n = rt.block_on(async { case.backend.counts().unwrap().files });
    assert_eq!(n, 0);
}

/// The rows of `sql`'s first column, as text.
fn query_texts(url: &str, sql: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        c.query(sql, &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect()
    })
}

#[test]
fn a_load_builds_the_hnsw_graph_after_its_vectors() {
    let Some(opts) = options() else { return };
    let _keep = Schema(opts.clone());
    let graph = || {
        query_texts(
            &opts.url,
            &format!(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = '{}' \
                 AND indexname = 'chunk_vectors_hnsw'",
                opts.schema
            ),
        )
    };
    let backend = PostgresBackend::open(&opts, Some((model("load"), 2))).unwrap();
    // Three files of 150 chunks into an empty index: a load, past the
    // chunks after which the graph is dropped.
    let put = |backend: &PostgresBackend, f: usize| {
        // A hash of its own for each text (`chunk`'s collide here).
        let chunks: Vec<NewChunk> = (0..150)
            .map(|j| {
                let text = format!("load{f} part{j}");
                NewChunk {
                    hash: format!("h-{text}"),
                    ..chunk(&text)
                }
            })
            .collect();
        let vectors: Vec<Vec<f32>> = (0..150)
            .map(|j| {
                let a = (f * 150 + j) as f32 / 100.0;
                vec![a.cos(), a.sin()]
            })
            .collect();
        backend
            .upsert_file(
                &file(&format!("memory/load{f}.md")),
                &chunks,
                Some(&vectors),
            )
            .unwrap();
    };
    for f in 0..3 {
        put(&backend, f);
    }
    assert!(graph().is_empty(), "the graph waits for the load's end");
    // Meanwhile a vector search scans exactly.
    let a = 200.0f32 / 100.0;
    let hits = backend.vector_search(&[a.cos(), a.sin()], 3, &[]).unwrap();
    let texts: Vec<String> = backend
        .chunks(&[hits[0].0])
        .unwrap()
        .into_iter()
        .map(|c| c.text)
        .collect();
    assert_eq!(texts, vec!["load1 part50".to_string()]);
    backend.after_writes().unwrap();
    let def = graph();
    assert!(
        def.len() == 1 && def[0].contains("ef_construction='128'"),
        "{def:?}"
    );
    assert_eq!(backend.counts().unwrap().vectors, 450);
    // A load stopped before its end leaves no graph: the next writer's
    // upkeep builds it, though its own write was no load.
    admin(
        &opts.url,
        &format!("DROP INDEX \"{}\".chunk_vectors_hnsw", opts.schema),
    );
    let next = PostgresBackend::open(&opts, Some((model("load"), 2))).unwrap();
    put(&next, 3);
    assert!(graph().is_empty());
    next.after_writes().unwrap();
    assert_eq!(graph().len(), 1);
    assert_eq!(next.counts().unwrap().vectors, 600);
}

#[test]
fn a_deleted_files_own_words_leave_the_vocabulary() {
    let Some(opts) = options() else { return };
    let _keep = Schema(opts.clone());
    let backend = PostgresBackend::open(&opts, None).unwrap();
    let vocab = || {
        query_texts(
            &opts.url,
            &format!(
                "SELECT token FROM \"{}\".vocab WHERE token IN ('zorblax', 'shared') ORDER BY token",
                opts.schema
            ),
        )
    };
    backend
        .upsert_file(&file("memory/a.md"), &[chunk("zorblax shared")], None)
        .unwrap();
    backend
        .upsert_file(&file("memory/b.md"), &[chunk("shared words")], None)
        .unwrap();
    assert_eq!(vocab(), ["shared", "zorblax"]);
    // Forgotten: the file's own word goes, the shared one stays.
    backend.delete_file("memory/a.md").unwrap();
    assert_eq!(vocab(), ["shared"]);
    // Rewritten without it: the same.
    backend
        .upsert_file(&file("memory/a.md"), &[chunk("zorblax again")], None)
        .unwrap();
    backend
        .upsert_file(&file("memory/a.md"), &[chunk("nothing of it")], None)
        .unwrap();
    assert_eq!(vocab(), ["shared"]);
}
