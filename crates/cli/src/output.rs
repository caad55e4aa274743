//! Error reporting, exit codes, stdout and progress bars at the binary's
//! edge. Results go to stdout through [`outln!`] and [`out!`], never
//! `println!`: a reader that closes the pipe early (`mnemo get … | head -1`)
//! ends the command quietly instead of panicking it.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mnemo::core::{Coded, ErrorCode};
use mnemo::DownloadProgress;

/// Writes one result line to stdout (as `println!`); a closed stdout
/// returns from the enclosing function with [`StdoutClosed`].
macro_rules! outln {
    () => {
        $crate::output::write_out(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::output::write_out(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// Writes to stdout (as `print!`) and flushes; see [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_out(format_args!($($arg)*))?
    };
}

/// Stdout was closed by its reader: nothing more can be shown, and nothing
/// went wrong. The command stops and the process exits with success.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Writes `args` to stdout and flushes it.
pub fn write_out(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => anyhow::Error::new(StdoutClosed),
            _ => anyhow::Error::new(e).context("cannot write to stdout"),
        })
}

/// True when `err` is (caused by) a closed stdout: [`StdoutClosed`], or a
/// bare broken pipe, which is what `writeln!` on a locked stdout returns.
pub fn is_stdout_closed(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|c| c.downcast_ref::<StdoutClosed>().is_some())
        || err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

/// A bar drawn on stderr when stderr is a terminal and hidden otherwise, so
/// that logs, pipes and tests get only the result lines.
pub fn stderr_bar(template: &str) -> ProgressBar {
    let bar = ProgressBar::hidden();
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(ProgressDrawTarget::stderr());
    }
    bar.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

/// A spinner on stderr, drawn only when stderr is a terminal, while a
/// model works (a turn, memory work, consolidation): what is going on, how
/// far the model is when it can tell ([`Activity::follow`]), and for how
/// long, so a local model's minute is not a silent one.
#[derive(Clone)]
pub struct Activity {
    bar: ProgressBar,
    /// What is going on ("the model is answering").
    what: Arc<Mutex<String>>,
    /// How far it is, when something says ("57 tokens written").
    detail: Arc<Mutex<Option<String>>>,
    /// Set when done: a follower stops.
    stopped: Arc<AtomicBool>,
}

impl Activity {
    /// Starts spinning with `what`.
    pub fn start(what: &str) -> Self {
        let bar = stderr_bar("{spinner} {msg} ({elapsed})");
        bar.set_message(what.to_string());
        if !bar.is_hidden() {
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
        }
        Activity {
            bar,
            what: Arc::new(Mutex::new(what.to_string())),
            detail: Arc::new(Mutex::new(None)),
            stopped: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Says what is going on now.
    pub fn set(&self, what: impl Into<String>) {
        *self.what.lock().unwrap_or_else(|e| e.into_inner()) = what.into();
        self.redraw();
    }

    fn redraw(&self) {
        let what = self.what.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let msg = match &*self.detail.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(d) => format!("{what}: {d}"),
            None => what,
        };
        self.bar.set_message(msg);
    }

    /// Shows how far the work is, as `detail` says (asked a few times a
    /// second, `None` when it cannot tell), after what is going on, until
    /// [`Activity::done`]. Nothing is asked when the spinner is not drawn.
    pub fn follow(&self, detail: impl Fn() -> Option<String> + Send + 'static) {
        if self.bar.is_hidden() {
            return;
        }
        let me = self.clone();
        std::thread::spawn(move || {
            while !me.stopped.load(Ordering::Relaxed) {
                let now = detail();
                let changed = {
                    let mut d = me.detail.lock().unwrap_or_else(|e| e.into_inner());
                    let changed = *d != now;
                    *d = now;
                    changed
                };
                if changed {
                    me.redraw();
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        });
    }

    /// [`Activity::follow`] of how far `engine`'s model is (a local
    /// model's prompt tokens read, answer tokens written).
    pub fn follow_model(&self, engine: &Arc<mnemo::engine::Engine>) {
        let engine = engine.clone();
        self.follow(move || engine.model_activity().map(|m| model_progress(&m)));
    }

    /// Runs `f` (which prints) with the spinner out of the way.
    pub fn print<T>(&self, f: impl FnOnce() -> T) -> T {
        self.bar.suspend(f)
    }

    /// Stops and clears the spinner.
    pub fn done(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        self.bar.finish_and_clear();
    }

    /// Runs `f` with the spinner saying `what`, and how far `engine`'s
    /// model is.
    pub fn during_model<T>(
        what: &str,
        engine: &Arc<mnemo::engine::Engine>,
        f: impl FnOnce() -> T,
    ) -> T {
        let activity = Activity::start(what);
        activity.follow_model(engine);
        let out = f();
        activity.done();
        out
    }
}

/// How far a model is, for [`Activity::follow`]: reading a prompt of so
/// many tokens, or so many tokens of the answer written.
pub fn model_progress(a: &mnemo::llm::ModelActivity) -> String {
    if a.reading {
        format!("reading the prompt ({} tokens)", a.prompt_tokens)
    } else {
        format!(
            "{} token(s) written after a {}-token prompt",
            a.written, a.prompt_tokens
        )
    }
}

/// Runs `f` with a reporter for a model download (the first run's ~90 MB):
/// a bar on a terminal, else one stderr line per file, so a slow first run
/// says why.
pub fn with_download_bar<T>(f: impl FnOnce(&mut dyn FnMut(&DownloadProgress)) -> T) -> T {
    with_download_bar_for("the embedding model", f)
}

/// [`with_download_bar`] for the model `what` names ("the chat model").
pub fn with_download_bar_for<T>(
    what: &str,
    f: impl FnOnce(&mut dyn FnMut(&DownloadProgress)) -> T,
) -> T {
    let bar = stderr_bar("{msg} [{bar:25}] {bytes}/{total_bytes} {bytes_per_sec}");
    let mut announced = None;
    let out = f(&mut |p: &DownloadProgress| {
        // A wheel's full name (platform tags and all) would wrap the line.
        let name = match p.file.strip_suffix(".whl") {
            Some(w) => w.splitn(3, '-').take(2).collect::<Vec<_>>().join("-"),
            None => p.file.clone(),
        };
        let msg = if p.file_count > 1 {
            format!("downloading {name} ({}/{})", p.file_index + 1, p.file_count)
        } else {
            format!("downloading {name}")
        };
        if bar.is_hidden() {
            if announced != Some(p.file_index) {
                announced = Some(p.file_index);
                let size = p
                    .total
                    .map(|t| format!(" ({:.1} MB)", t as f64 / 1e6))
                    .unwrap_or_default();
                eprintln!("mnemo: {msg}{size} for {what} (once; it is cached)");
            }
            return;
        }
        bar.set_length(p.total.unwrap_or(0));
        bar.set_position(p.bytes);
        bar.set_message(msg);
    });
    bar.finish_and_clear();
    out
}

/// Loads (on first use, downloads) the embedding model in the background, so
/// a server answers its handshake at once and its first search does not
/// wait for the model; a download is announced on stderr.
pub fn warm_embedder(mnemo: &std::sync::Arc<mnemo::Mnemo>) {
    let mnemo = mnemo.clone();
    std::thread::spawn(move || {
        // Keyword-only mode is stated in every search result; only a
        // broken configuration is worth a line here.
        match with_download_bar(|p| mnemo.embedder_with_progress(p)) {
            Ok(choice) => {
                for note in &choice.notes {
                    eprintln!("mnemo: note: {note}");
                }
            }
            Err(e) => eprintln!("mnemo: warning: {e}"),
        }
    });
}

/// Prints `err` with its causes (and, for a command run with `--json`, as
/// `{"error": {"code", "message"}}` on stdout) and returns the exit code
/// for it.
pub fn report_error(err: &anyhow::Error, json: bool) -> i32 {
    // A workspace that does not exist is the CLI's own case (the servers
    // never open one), with a code and an exit status of its own.
    let no_workspace = err
        .chain()
        .any(|c| c.downcast_ref::<crate::ctx::NoWorkspace>().is_some());
    let code = classify(err);
    eprintln!("error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    if json {
        let message: Vec<String> = err.chain().map(|c| c.to_string()).collect();
        let code = if no_workspace {
            crate::ctx::NoWorkspace::CODE
        } else {
            code.unwrap_or(ErrorCode::Internal).as_str()
        };
        let body = serde_json::json!({"error": {
            "code": code,
            "message": message.join(": "),
        }});
        // Nothing more can be done when stdout is closed too.
        let _ = write_out(format_args!("{body}\n"));
    }
    if no_workspace {
        return crate::ctx::NoWorkspace::EXIT_CODE;
    }
    code.map(ErrorCode::exit_code).unwrap_or(1)
}

/// The code of the first error in `err`'s chain that names one
/// ([`Coded`]): every library error type does, and the exit status and the
/// `--json` code come from it alone.
fn classify(err: &anyhow::Error) -> Option<ErrorCode> {
    err.chain().find_map(as_coded).map(Coded::code)
}

/// `e` as the [`Coded`] error it is. anyhow keeps each cause as a
/// `dyn Error`, which cannot be asked for a trait, so each coded type is
/// tried by name; the test `every_coded_error_is_classified` fails when a
/// type that implements `Coded` anywhere in the workspace is not here.
fn as_coded<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Coded> {
    macro_rules! coded {
        ($($t:ty),+ $(,)?) => {
            $(if let Some(c) = e.downcast_ref::<$t>() {
                return Some(c);
            })+
        };
    }
    coded!(
        mnemo_service::Error,
        mnemo::Error,
        mnemo_import::Error,
        mnemo_eval::EvalError,
        mnemo::engine::Error,
        mnemo::llm::LlmError,
        mnemo::local_llm::Error,
        mnemo::embed::Error,
        mnemo::index::IndexError,
        mnemo::store::Error,
        mnemo::core::PathError,
        mnemo::core::ConfigError,
        UsageError,
    );
    None
}

/// A mistake in how a command was called.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

impl Coded for UsageError {
    fn code(&self) -> ErrorCode {
        ErrorCode::InvalidInput
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// Every `impl … Coded for T` in the workspace's crates, by type name.
    fn coded_types() -> Vec<String> {
        let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut out = Vec::new();
        let mut dirs = vec![crates];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().to_string();
                if path.is_dir() {
                    // Sources only: not tests, fixtures or build output.
                    if !matches!(name.as_str(), "target" | "tests" | "node_modules" | "fuzz") {
                        dirs.push(path);
                    }
                } else if name.ends_with(".rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    for line in text.lines() {
                        let line = line.trim();
                        if let Some(rest) = line.strip_prefix("impl ") {
                            if let Some((_, ty)) = rest.split_once("Coded for ") {
                                out.push(ty.trim_end_matches(" {").trim().to_string());
                            }
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn every_coded_error_is_classified() {
        let types = coded_types();
        assert!(types.len() >= 13, "{types:?}");
        let source = include_str!("output.rs");
        let list = source
            .split(concat!("    coded", "!(\n"))
            .nth(1)
            .and_then(|s| s.split(");").next())
            .unwrap();
        let listed: Vec<&str> = list
            .split(',')
            .map(|t| t.trim().rsplit("::").next().unwrap_or(""))
            .filter(|t| !t.is_empty())
            .collect();
        for ty in &types {
            assert!(
                listed.contains(&ty.rsplit("::").next().unwrap()),
                "{ty} implements Coded but as_coded does not try it: add it to the list"
            );
        }
    }

    #[test]
    fn the_code_comes_from_the_first_coded_cause() {
        let err = anyhow::Error::new(mnemo::core::PathError::Empty).context("reading the file");
        assert_eq!(classify(&err), Some(ErrorCode::Forbidden));
        let err = anyhow::Error::new(UsageError("no such flag".into()));
        assert_eq!(classify(&err), Some(ErrorCode::InvalidInput));
        assert_eq!(classify(&anyhow::anyhow!("plain")), None);
    }
}
