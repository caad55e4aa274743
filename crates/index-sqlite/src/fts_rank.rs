//! `mnemo_bm25`: FTS5's BM25 with the document counts given, instead of
//! counted by FTS5 for every statement.
//!
//! FTS5's `bm25()` computes each phrase's IDF on its first call in a
//! statement by running the phrase as a query of its own over the whole
//! index (`xQueryPhrase`), i.e. it walks every posting list of the query
//! once more just to count its chunks: about 30 % of the keyword side at
//! 100,000 chunks (docs/BENCHMARKS-LOG.md, items 27 and 30). The keyword side
//! already holds those counts (`fts5vocab`, cached per revision of the
//! index, see [`crate::fts`]), so `mnemo_bm25(chunks_fts, counts)` takes
//! them as a blob of little-endian `i64`, one per phrase of the MATCH
//! expression in its order, and computes the same score as `bm25()` with
//! the same operations in the same order (k1 = 1.2, b = 0.75, the IDF
//! `ln((N - n + 0.5) / (n + 0.5))` floored at 1e-6, every column weighted
//! 1, the result negated): the scores are equal, bit for bit, whenever the
//! counts are FTS5's own (`tests::same_scores_as_bm25`).
//!
//! A row's length in tokens is read once per revision of the index: FTS5
//! reads it from its `docsize` table for every row it scores (a B-tree
//! lookup, a quarter of the keyword side once the counts were given), so
//! the lengths seen are kept in [`DocLens`], a table by chunk id shared by
//! the index's reading connections and replaced when the index's revision
//! changes.
//!
//! It is only used for expressions of single tokens that FTS5's tokenizer
//! keeps as they are (ASCII letters and digits, CJK ideographs), whose
//! vocabulary count is exactly the number of chunks the phrase matches;
//! phrases of several words and words with diacritics keep `bm25()`.
//!
//! FTS5 offers auxiliary functions only through its C API
//! (`fts5_api.xCreateFunction`), which rusqlite does not wrap: this module
//! is the one place the index calls SQLite's C interface directly.

use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::ffi;
use rusqlite::Connection;

/// The function's name in SQL.
pub(crate) const NAME: &str = "mnemo_bm25";

/// Whether FTS5's tokenizer (unicode61, remove_diacritics 2) keeps `term`
/// as one token, unchanged: then its vocabulary count is the number of
/// chunks the quoted term matches.
pub(crate) fn kept_as_is(term: &str) -> bool {
    !term.is_empty()
        && term.chars().all(|c| {
            c.is_ascii_lowercase()
                || c.is_ascii_digit()
                || ('\u{4E00}'..='\u{9FFF}').contains(&c)
                || ('\u{3400}'..='\u{4DBF}').contains(&c)
        })
}

/// The counts argument of `mnemo_bm25`.
pub(crate) fn counts_blob(counts: &[i64]) -> Vec<u8> {
    counts.iter().flat_map(|n| n.to_le_bytes()).collect()
}

/// One revision's row lengths by chunk id (0: not read yet; a row without
/// tokens matches nothing, so it is never scored), shared without a lock:
/// every slot is written with the one length its row has at the revision.
#[derive(Debug, Default)]
pub(crate) struct LenTable(Vec<AtomicU32>);

impl LenTable {
    fn slot(&self, id: i64) -> Option<&AtomicU32> {
        usize::try_from(id).ok().and_then(|i| self.0.get(i))
    }
}

/// Row lengths in tokens of one revision of the index, filled as rows are
/// scored. A statement takes the current table once, on its first row.
#[derive(Debug, Default)]
pub(crate) struct DocLens(Mutex<(Option<i64>, Arc<LenTable>)>);

impl DocLens {
    /// Starts revision `rev`, unless it is the current one, with a slot for
    /// every id up to `max_id` among `rows` chunks. Ids far sparser than the
    /// rows (more than 8 per chunk) get no table: their lengths are read
    /// from FTS5 each time, as before.
    pub fn at_rev(&self, rev: i64, max_id: i64, rows: i64) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if g.0 != Some(rev) {
            let slots = usize::try_from(max_id.saturating_add(1)).unwrap_or(0);
            let cap = usize::try_from(rows)
                .unwrap_or(0)
                .saturating_mul(8)
                .saturating_add(1 << 16);
            let table = if slots <= cap {
                (0..slots).map(|_| AtomicU32::new(0)).collect()
            } else {
                Vec::new()
            };
            *g = (Some(rev), Arc::new(LenTable(table)));
        }
    }

    fn table(&self) -> Arc<LenTable> {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(&g.1)
    }
}

unsafe extern "C" fn drop_lens(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: the user data of `mnemo_bm25` is an `Arc<DocLens>`
        // leaked by `register`, dropped once, here, by FTS5.
        drop(unsafe { Arc::from_raw(p.cast::<DocLens>().cast_const()) });
    }
}

/// Registers `mnemo_bm25` on `conn` (per connection, like any function),
/// keeping row lengths in `lens`.
pub(crate) fn register(conn: &Connection, lens: &Arc<DocLens>) -> rusqlite::Result<()> {
    let api = fts5_api(conn)?;
    let user = Arc::into_raw(Arc::clone(lens)).cast_mut().cast::<c_void>();
    // SAFETY: `api` is the live `fts5_api` of this connection (checked non
    // null by `fts5_api`); the name is a NUL-terminated static string; the
    // user data is an `Arc` FTS5 hands back to `drop_lens` when the
    // connection closes.
    let rc = unsafe {
        match (*api).xCreateFunction {
            Some(create) => create(
                api,
                c"mnemo_bm25".as_ptr(),
                user,
                Some(mnemo_bm25),
                Some(drop_lens),
            ),
            None => ffi::SQLITE_MISUSE,
        }
    };
    if rc != ffi::SQLITE_OK {
        // SAFETY: FTS5 keeps the user data only when it created the
        // function (`fts5CreateAux`), so this reference is still ours.
        unsafe { drop_lens(user) };
        return Err(rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            Some(format!("registering the FTS5 function {NAME}")),
        ));
    }
    Ok(())
}

/// The connection's `fts5_api`, through `SELECT fts5(?1)` with a pointer
/// bound to `?1` (the documented way to reach it).
fn fts5_api(conn: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
    let fail = |rc: c_int, what: &str| {
        rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(format!("fts5_api: {what}")))
    };
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
    // SAFETY: the handle is this connection's, used on this thread only
    // while `conn` is borrowed; the statement is finalized on every path;
    // the bound pointer is to `api`, which outlives the statement.
    unsafe {
        let db = conn.handle();
        let rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &mut stmt,
            ptr::null_mut(),
        );
        if rc != ffi::SQLITE_OK {
            ffi::sqlite3_finalize(stmt);
            return Err(fail(rc, "prepare"));
        }
        let rc = ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        if rc != ffi::SQLITE_OK {
            ffi::sqlite3_finalize(stmt);
            return Err(fail(rc, "bind"));
        }
        let rc = ffi::sqlite3_step(stmt);
        ffi::sqlite3_finalize(stmt);
        if rc != ffi::SQLITE_ROW || api.is_null() {
            return Err(fail(rc, "no FTS5 in this SQLite"));
        }
    }
    Ok(api)
}

/// What one statement computes once: the phrases' IDFs and the average
/// row length, and a buffer for the row's phrase frequencies.
struct Data {
    idf: Vec<f64>,
    avgdl: f64,
    freq: Vec<f64>,
    lens: Arc<LenTable>,
}

unsafe extern "C" fn drop_data(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: every pointer handed to `xSetAuxdata` with this
        // destructor is a `Box<Data>` leaked by `data`.
        drop(unsafe { Box::from_raw(p.cast::<Data>()) });
    }
}

/// Sets an SQL error result.
unsafe fn error(ctx: *mut ffi::sqlite3_context, msg: &CStr) {
    // SAFETY: `ctx` is the live context of the current call.
    unsafe { ffi::sqlite3_result_error(ctx, msg.as_ptr(), -1) };
}

/// The statement's `Data`, computed on the first call from the counts blob
/// `arg` (FTS5 keeps it until the statement ends).
unsafe fn data(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    arg: *mut ffi::sqlite3_value,
    lens: *const DocLens,
) -> Result<*mut Data, &'static CStr> {
    let (Some(get), Some(set), Some(phrases), Some(rows), Some(total)) = (
        api.xGetAuxdata,
        api.xSetAuxdata,
        api.xPhraseCount,
        api.xRowCount,
        api.xColumnTotalSize,
    ) else {
        return Err(c"mnemo_bm25: an FTS5 function is missing");
    };
    // SAFETY: `fts` is the context FTS5 passed to this call; the value
    // pointer is the call's argument; the blob is read within its length.
    unsafe {
        let p = get(fts, 0).cast::<Data>();
        if !p.is_null() {
            return Ok(p);
        }
        let n_phrase = usize::try_from(phrases(fts)).unwrap_or(0);
        let len = usize::try_from(ffi::sqlite3_value_bytes(arg)).unwrap_or(0);
        let blob = ffi::sqlite3_value_blob(arg).cast::<u8>();
        if len != 8 * n_phrase || (len > 0 && blob.is_null()) {
            return Err(c"mnemo_bm25: the counts blob needs one i64 per phrase");
        }
        let bytes: &[u8] = if len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(blob, len)
        };
        let (mut n_row, mut n_token) = (0i64, 0i64);
        if rows(fts, &mut n_row) != ffi::SQLITE_OK || total(fts, -1, &mut n_token) != ffi::SQLITE_OK
        {
            return Err(c"mnemo_bm25: the table's sizes could not be read");
        }
        let idf = bytes
            .chunks_exact(8)
            .map(|b| {
                let n_hit = i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                // As fts5Bm25GetData: the integer difference, then + 0.5.
                let idf = (((n_row - n_hit) as f64) + 0.5) / ((n_hit as f64) + 0.5);
                let idf = idf.ln();
                if idf <= 0.0 {
                    1e-6
                } else {
                    idf
                }
            })
            .collect();
        let d = Box::into_raw(Box::new(Data {
            idf,
            avgdl: n_token as f64 / n_row as f64,
            freq: vec![0.0; n_phrase],
            lens: if lens.is_null() {
                Arc::default()
            } else {
                (*lens).table()
            },
        }));
        if set(fts, d.cast::<c_void>(), Some(drop_data)) != ffi::SQLITE_OK {
            // FTS5 has already called the destructor on failure.
            return Err(c"mnemo_bm25: out of memory");
        }
        Ok(d)
    }
}

/// The auxiliary function: `mnemo_bm25(chunks_fts, counts)`.
unsafe extern "C" fn mnemo_bm25(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n_val: c_int,
    vals: *mut *mut ffi::sqlite3_value,
) {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    // SAFETY: FTS5 calls this with its live API, context and `n_val`
    // argument values; `Data` is owned by FTS5's aux-data slot for the
    // statement and used by this call only (calls do not overlap).
    unsafe {
        if api.is_null() || n_val != 1 || vals.is_null() {
            return error(
                ctx,
                c"mnemo_bm25(table, counts) takes one argument after the table",
            );
        }
        let api = &*api;
        let (Some(inst_count), Some(inst), Some(column_size), Some(user), Some(rowid)) = (
            api.xInstCount,
            api.xInst,
            api.xColumnSize,
            api.xUserData,
            api.xRowid,
        ) else {
            return error(ctx, c"mnemo_bm25: an FTS5 function is missing");
        };
        let lens = user(fts).cast::<DocLens>().cast_const();
        let d = match data(api, fts, *vals, lens) {
            Ok(d) => &mut *d,
            Err(msg) => return error(ctx, msg),
        };
        d.freq.iter_mut().for_each(|f| *f = 0.0);
        let mut n_inst: c_int = 0;
        if inst_count(fts, &mut n_inst) != ffi::SQLITE_OK {
            return error(ctx, c"mnemo_bm25: xInstCount failed");
        }
        for i in 0..n_inst {
            let (mut ip, mut ic, mut io) = (0, 0, 0);
            if inst(fts, i, &mut ip, &mut ic, &mut io) != ffi::SQLITE_OK {
                return error(ctx, c"mnemo_bm25: xInst failed");
            }
            if let Some(f) = usize::try_from(ip).ok().and_then(|ip| d.freq.get_mut(ip)) {
                *f += 1.0;
            }
        }
        let slot = d.lens.slot(rowid(fts));
        let n_tok = match slot.map(|a| a.load(Ordering::Relaxed)) {
            Some(n) if n > 0 => n,
            _ => {
                let mut n_tok: c_int = 0;
                if column_size(fts, -1, &mut n_tok) != ffi::SQLITE_OK {
                    return error(ctx, c"mnemo_bm25: xColumnSize failed");
                }
                let n = u32::try_from(n_tok).unwrap_or(0);
                if let Some(a) = slot {
                    a.store(n, Ordering::Relaxed);
                }
                n
            }
        };
        let dl = f64::from(n_tok);
        let mut score = 0.0;
        for (idf, f) in d.idf.iter().zip(&d.freq) {
            score += idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * dl / d.avgdl)));
        }
        ffi::sqlite3_result_double(ctx, -score);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::params;

    #[test]
    fn kept_as_is_words() {
        assert!(kept_as_is("term42"));
        assert!(kept_as_is("过敏"));
        assert!(!kept_as_is("café"));
        assert!(!kept_as_is("a b"));
        assert!(!kept_as_is(""));
        assert!(!kept_as_is("Tea"));
    }

    /// On a generated index, `mnemo_bm25` with the vocabulary's counts gives
    /// every matching row the score `bm25()` gives it, bit for bit, for OR
    /// and AND expressions, and a wrong counts blob is an error.
    #[test]
    fn same_scores_as_bm25() {
        use rand::rngs::StdRng;
        use rand::{RngExt, SeedableRng};
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(crate::backend::SCHEMA).unwrap();
        let lens = Arc::new(DocLens::default());
        register(&c, &lens).unwrap();
        lens.at_rev(0, 3_000, 3_000);
        let mut rng = StdRng::seed_from_u64(3);
        let word = |rng: &mut StdRng| {
            if rng.random::<f32>() < 0.3 {
                format!("w{}", rng.random_range(0..20))
            } else {
                format!("t{}", rng.random_range(0..400))
            }
        };
        for id in 1..=3_000i64 {
            let len = rng.random_range(5..60);
            let words: Vec<String> = (0..len).map(|_| word(&mut rng)).collect();
            c.execute(
                "INSERT INTO chunks_fts(rowid, tokens) VALUES (?1, ?2)",
                params![id, words.join(" ")],
            )
            .unwrap();
        }
        // Deleted rows must not count (a contentless-delete table).
        c.execute("DELETE FROM chunks_fts WHERE rowid % 7 = 0", [])
            .unwrap();
        let doc = |t: &str| -> i64 {
            c.query_row(
                "SELECT doc FROM chunks_vocab WHERE term = ?1",
                params![t],
                |r| r.get(0),
            )
            .unwrap_or(0)
        };
        let (mut rows, mut queries) = (0usize, 0usize);
        for q in 0..80 {
            if q == 40 {
                // A new revision: rows rewritten under the same ids with
                // other lengths; the lengths seen before must not be used.
                for id in (1..=3_000i64).filter(|id| id % 7 != 0 && id % 5 == 0) {
                    c.execute("DELETE FROM chunks_fts WHERE rowid = ?1", params![id])
                        .unwrap();
                    c.execute(
                        "INSERT INTO chunks_fts(rowid, tokens) VALUES (?1, ?2)",
                        params![id, "w1 w2 t5"],
                    )
                    .unwrap();
                }
                let kept = lens.table().slot(5).map(|a| a.load(Ordering::Relaxed));
                assert!(kept.is_some_and(|n| n > 0), "row 5's length was kept");
                lens.at_rev(1, 3_000, 3_000);
            }
            let terms: Vec<String> = (0..1 + q % 5).map(|_| word(&mut rng)).collect();
            let quoted: Vec<String> = terms.iter().map(|t| format!("\"{t}\"")).collect();
            let expr = if q % 3 == 2 && terms.len() > 2 {
                format!(
                    "({}) AND ({})",
                    quoted[..1].join(" OR "),
                    quoted[1..].join(" OR ")
                )
            } else {
                quoted.join(" OR ")
            };
            let counts = counts_blob(&terms.iter().map(|t| doc(t)).collect::<Vec<_>>());
            let mut stmt = c
                .prepare(
                    "SELECT rowid, bm25(chunks_fts), mnemo_bm25(chunks_fts, ?2) FROM chunks_fts
                     WHERE chunks_fts MATCH ?1",
                )
                .unwrap();
            let got: Vec<(i64, f64, f64)> = stmt
                .query_map(params![expr, counts], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            for (id, want, have) in &got {
                assert_eq!(want.to_bits(), have.to_bits(), "row {id} of {expr}");
            }
            rows += got.len();
            queries += 1;
        }
        assert!(rows > 10_000, "{rows} rows over {queries} queries");
        let bad = c.query_row(
            "SELECT mnemo_bm25(chunks_fts, x'00') FROM chunks_fts WHERE chunks_fts MATCH 'w1'",
            [],
            |r| r.get::<_, f64>(0),
        );
        assert!(bad.is_err(), "{bad:?}");
    }
}
