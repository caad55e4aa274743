//! `mnemo setup claude-code`: the MCP server entry and the hooks
//! (`mnemo hook claude-code …`, see `hook.rs`) written into a project's
//! Claude Code settings, merged into what is there, and taken out again
//! with `--undo`.
//!
//! Where they go (Claude Code 2.1.x, "Settings files" and "MCP" in its
//! documentation):
//!
//! - The MCP server: the project's `.mcp.json`, `mcpServers.mnemo`, the
//!   file Claude Code reads project-scoped servers from (it asks once
//!   before it starts a server of that file).
//! - The hooks: `.claude/settings.local.json`, the project settings that
//!   are the user's own and not checked in. The commands name this
//!   machine's `mnemo` and workspace folder, which are nobody else's;
//!   `--shared` writes them into `.claude/settings.json` (checked in,
//!   for everyone in the project) for a team that wants that.
//!
//! Merging keeps everything that is there: other servers, other hooks
//! (in the same events too), every other key with its value, the key
//! order and the file's indentation. mnemo's own entries are known by
//! their command (`… hook claude-code <event>`; a server `mnemo` whose
//! command is a `mnemo` and whose arguments end in `mcp`), so a second
//! run changes nothing and `--undo` removes those and nothing else. A
//! settings file that is not valid JSON is an error and nothing is
//! written.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};

use crate::cmd::hook::{HOOK_EVENTS, PROMPT_TOKENS, START_TOKENS};
use crate::ctx::GlobalArgs;
use crate::output::UsageError;

/// `mnemo setup`.
#[derive(Debug, Subcommand)]
pub enum SetupCommand {
    /// Give Claude Code this workspace's memory: the MCP server and the hooks
    ///
    /// Writes, into the project folder (--project, else the current one):
    ///
    ///   .mcp.json                    mcpServers.mnemo: `mnemo --workspace WS mcp`, the
    ///                                memory tools (memory_search, memory_get, memory_write, …)
    ///   .claude/settings.local.json  the hooks (your own project settings, not checked in;
    ///                                --shared: .claude/settings.json, for the whole team)
    ///
    /// The hooks (`mnemo hook claude-code EVENT`, run by Claude Code):
    ///
    ///   SessionStart       puts MEMORY.md, the current facts and today's and yesterday's
    ///                      daily logs in front of the session (--start-tokens)
    ///   UserPromptSubmit   searches memory with each prompt and adds what it finds,
    ///                      within --recall-tokens (nothing when nothing is relevant)
    ///   PreCompact, Stop,  record the conversation into the session log
    ///   SessionEnd         sessions/claude-code_<project>_<session id>.jsonl (only what is
    ///                      new) and distil it into memory when a chat model is configured
    ///                      ([provider] in mnemo.toml), in the background: the hooks
    ///                      return at once
    ///
    /// What is there is kept: other servers and hooks, every other key, the
    /// key order and the indentation. Running it again changes nothing;
    /// --undo removes exactly what it added. A settings file that is not
    /// valid JSON is reported and nothing is written. The workspace is
    /// created when it does not exist yet.
    ///
    /// Example: mnemo --workspace ~/memory setup claude-code --project ~/src/app
    #[command(name = "claude-code", verbatim_doc_comment)]
    ClaudeCode(ClaudeCodeArgs),
}

/// Arguments of `mnemo setup claude-code`.
#[derive(Debug, Args)]
pub struct ClaudeCodeArgs {
    /// The project folder: where Claude Code is started, which holds .mcp.json
    /// and .claude/ [default: the current folder]
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Remove the MCP server and the hooks setup added (from both settings
    /// files), and nothing else
    #[arg(long)]
    pub undo: bool,
    /// Write the hooks into .claude/settings.json, checked in and shared with
    /// everyone in the project, instead of .claude/settings.local.json
    #[arg(long)]
    pub shared: bool,
    /// The mnemo command the hooks and the MCP server run, e.g. `mnemo` to
    /// find it on PATH [default: the absolute path of this mnemo]
    #[arg(long, value_name = "COMMAND")]
    pub binary: Option<String>,
    /// At most this many tokens of memory in front of each session
    #[arg(long, value_name = "TOKENS", default_value_t = START_TOKENS)]
    pub start_tokens: usize,
    /// At most this many tokens recalled for each prompt
    #[arg(long, value_name = "TOKENS", default_value_t = PROMPT_TOKENS)]
    pub recall_tokens: usize,
    /// Say what would change and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(command: SetupCommand, global: &GlobalArgs) -> Result<()> {
    match command {
        SetupCommand::ClaudeCode(args) => claude_code(args, global),
    }
}

/// Seconds Claude Code lets each hook run (its `timeout`); the hooks keep
/// within them on their own (see `hook.rs`).
fn timeout(event: &str) -> u64 {
    match event {
        "UserPromptSubmit" => 15,
        _ => 30,
    }
}

/// The name of the MCP server entry.
const SERVER: &str = "mnemo";

/// The files setup writes, relative to the project.
const MCP_FILE: &str = ".mcp.json";
const LOCAL_SETTINGS: &str = ".claude/settings.local.json";
const SHARED_SETTINGS: &str = ".claude/settings.json";

fn claude_code(args: ClaudeCodeArgs, global: &GlobalArgs) -> Result<()> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    let project = absolute(&cwd, args.project.as_deref().unwrap_or(Path::new(".")));
    if !project.is_dir() {
        return Err(UsageError(format!(
            "the project folder {} does not exist: give the folder Claude Code runs in with --project DIR",
            project.display()
        ))
        .into());
    }
    let ctx = global.ctx()?;
    let workspace = absolute(&cwd, ctx.workspace.root());
    let binary = match &args.binary {
        Some(b) => b.clone(),
        None => std::env::current_exe()
            .context("cannot tell where this mnemo is: give its path with --binary")?
            .display()
            .to_string(),
    };
    let ws_text = workspace.display().to_string();

    // Every file is read and checked before anything is written.
    let mut mcp = JsonFile::read(&project, MCP_FILE)?;
    let mut local = JsonFile::read(&project, LOCAL_SETTINGS)?;
    let mut shared = JsonFile::read(&project, SHARED_SETTINGS)?;
    let mut notes = Vec::new();
    if args.undo {
        if let Some(other) = remove_server(&mut mcp.value)? {
            notes.push(other);
        }
        remove_hooks(&mut local.value)?;
        remove_hooks(&mut shared.value)?;
    } else {
        let entry = json!({
            "type": "stdio",
            "command": binary,
            "args": ["--workspace", ws_text, "mcp"],
        });
        add_server(&mut mcp.value, entry)?;
        let prefix = format!(
            "{} --workspace {} hook claude-code",
            shell_quote(&binary),
            shell_quote(&ws_text)
        );
        let wanted: Vec<(&str, Value)> = HOOK_EVENTS
            .iter()
            .map(|(event, slug)| {
                let tokens = match *event {
                    "SessionStart" => format!(" --tokens {}", args.start_tokens),
                    "UserPromptSubmit" => format!(" --tokens {}", args.recall_tokens),
                    _ => String::new(),
                };
                let hook = json!({
                    "type": "command",
                    "command": format!("{prefix} {slug}{tokens}"),
                    "timeout": timeout(event),
                });
                (*event, hook)
            })
            .collect();
        let (target, other) = if args.shared {
            (&mut shared, &mut local)
        } else {
            (&mut local, &mut shared)
        };
        add_hooks(&mut target.value, &wanted)?;
        // One place only: hooks in both files would all run.
        remove_hooks(&mut other.value)?;
    }

    let files = [&mcp, &local, &shared];
    let changed: Vec<&&JsonFile> = files.iter().filter(|f| f.changed()).collect();
    let backup_path = backup_path(&ctx.workspace, &project);
    let mut backup = Backup::load(&backup_path);
    if !args.undo && !args.dry_run {
        if !ctx.workspace.root().exists() {
            super::init::create(&ctx.workspace)?;
            outln!("created workspace {ws_text}");
        }
        // The files as they were before the first setup, so that --undo
        // gives them back byte for byte.
        let mut keep = false;
        for f in &changed {
            if !backup.files.contains_key(f.rel) {
                backup.files.insert(f.rel.to_string(), f.original.clone());
                keep = true;
            }
        }
        if keep {
            backup.project = project.display().to_string();
            backup.save(&backup_path)?;
        }
    }
    for f in &changed {
        let what = f.describe();
        if args.dry_run {
            outln!("dry run: {what}");
        } else {
            f.write(backup.files.get(f.rel))?;
            outln!("{what}");
        }
    }
    if args.undo && !args.dry_run {
        Backup::remove(&backup_path);
    }
    if args.dry_run && !changed.is_empty() {
        outln!("dry run: nothing was written");
        return Ok(());
    }
    for n in notes {
        outln!("{n}");
    }
    if changed.is_empty() {
        if args.undo {
            outln!(
                "nothing to remove: Claude Code in {} has no mnemo server or hooks",
                project.display()
            );
        } else {
            outln!(
                "already set up: Claude Code in {} uses workspace {ws_text}; nothing changed",
                project.display()
            );
        }
        return Ok(());
    }
    if !args.undo && !args.dry_run {
        outln!(
            "done: start Claude Code in {}; it asks once before it starts the MCP server `mnemo` \
             from .mcp.json. Without a chat model ([provider] in {}/mnemo.toml) the hooks record \
             the conversations and do not distil them. Undo: mnemo --workspace {} setup claude-code --undo{}",
            project.display(),
            ws_text,
            shell_quote(&ws_text),
            if args.project.is_some() {
                format!(" --project {}", shell_quote(&project.display().to_string()))
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// What the first `setup claude-code` of a project found in the files it
/// changed, kept in the workspace (`.mnemo/claude-code-setup/`) until
/// `--undo` gives it back.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Backup {
    /// The project folder.
    project: String,
    /// Project-relative file → its text before setup (`None`: it did not
    /// exist).
    files: std::collections::BTreeMap<String, Option<String>>,
}

fn backup_path(ws: &mnemo::core::Workspace, project: &Path) -> PathBuf {
    use sha2::Digest as _;
    let hash = hex::encode(sha2::Sha256::digest(
        project.display().to_string().as_bytes(),
    ));
    ws.state_dir()
        .join("claude-code-setup")
        .join(format!("{}.json", &hash[..16]))
}

impl Backup {
    /// The backup at `path`; an empty one when there is none (or it cannot
    /// be read: undo then removes mnemo's entries and rewrites the rest).
    fn load(path: &Path) -> Backup {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn save(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let text = serde_json::to_vec_pretty(self)?;
        mnemo::store::fsutil::atomic_write(path, &text)?;
        Ok(())
    }

    fn remove(path: &Path) {
        let _ = std::fs::remove_file(path);
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// `path` made absolute against `cwd`.
fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    joined.canonicalize().unwrap_or(joined)
}

/// `text` as one word for a POSIX shell (Claude Code runs a hook's
/// command with one).
pub(crate) fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// One JSON settings file of the project: as found, and as it will be.
struct JsonFile {
    rel: &'static str,
    path: PathBuf,
    /// Its text, when it exists.
    original: Option<String>,
    /// Its value as found (an empty object when it does not exist).
    before: Value,
    value: Value,
}

impl JsonFile {
    /// Reads `rel` under `project`; a file that is not a JSON object is an
    /// error naming it, its line and column.
    fn read(project: &Path, rel: &'static str) -> Result<JsonFile> {
        let path = project.join(rel);
        let original = match std::fs::read(&path) {
            Ok(bytes) => Some(String::from_utf8(bytes).map_err(|_| {
                UsageError(format!(
                    "{} is not UTF-8 text: fix it or move it away, then run setup again; nothing was written",
                    path.display()
                ))
            })?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!("cannot read {}", path.display())))
            }
        };
        let before = match original.as_deref() {
            None => Value::Object(Map::new()),
            Some(t) if t.trim().is_empty() => Value::Object(Map::new()),
            Some(t) => serde_json::from_str::<Value>(t).map_err(|e| {
                UsageError(format!(
                    "{} is not valid JSON (line {}, column {}: {e}): fix it, then run setup again; nothing was written",
                    path.display(),
                    e.line(),
                    e.column()
                ))
            })?,
        };
        if !before.is_object() {
            return Err(UsageError(format!(
                "{} holds JSON that is not an object ({{ … }}): Claude Code would not read it either; fix it, then run setup again; nothing was written",
                path.display()
            ))
            .into());
        }
        Ok(JsonFile {
            rel,
            path,
            original,
            value: before.clone(),
            before,
        })
    }

    fn changed(&self) -> bool {
        self.value != self.before
    }

    /// What the write does, for the report.
    fn describe(&self) -> String {
        let empty = self.value.as_object().is_some_and(Map::is_empty);
        let what = |v: &Value| -> Vec<String> {
            let mut parts = Vec::new();
            if v.get("mcpServers").and_then(|s| s.get(SERVER)).is_some() {
                parts.push(format!("the MCP server `{SERVER}`"));
            }
            let events: Vec<&str> = HOOK_EVENTS
                .iter()
                .map(|(e, _)| *e)
                .filter(|e| has_our_hook(v, e))
                .collect();
            if !events.is_empty() {
                parts.push(format!("mnemo's hooks ({})", events.join(", ")));
            }
            parts
        };
        let (now, then) = (what(&self.value), what(&self.before));
        let gone: Vec<String> = then.iter().filter(|p| !now.contains(p)).cloned().collect();
        if empty && self.original.is_some() {
            return format!(
                "{}: removed {}; the file held nothing else and was deleted",
                self.rel,
                gone.join(" and ")
            );
        }
        if !gone.is_empty() && now.is_empty() {
            return format!("{}: removed {}", self.rel, gone.join(" and "));
        }
        let verb = if self.original.is_none() {
            "created with"
        } else if then.is_empty() {
            "added"
        } else {
            "updated"
        };
        format!("{}: {verb} {}", self.rel, now.join(" and "))
    }

    /// Writes the new value (atomically) with the file's own indentation,
    /// or deletes a file left empty by an undo. `before_setup` is the file
    /// as it was before the first setup (`None` inside: it did not exist):
    /// when the new value is what that held, that is written back as it
    /// was, byte for byte.
    fn write(&self, before_setup: Option<&Option<String>>) -> Result<()> {
        if let Some(Some(text)) = before_setup {
            let same = if text.trim().is_empty() {
                self.value.as_object().is_some_and(Map::is_empty)
            } else {
                serde_json::from_str::<Value>(text).is_ok_and(|v| v == self.value)
            };
            if same {
                mnemo::store::fsutil::atomic_write(&self.path, text.as_bytes())?;
                return Ok(());
            }
        }
        if self.value.as_object().is_some_and(Map::is_empty) {
            if self.original.is_some() {
                std::fs::remove_file(&self.path)
                    .with_context(|| format!("cannot delete {}", self.path.display()))?;
                // A `.claude/` folder left empty goes too.
                if let Some(dir) = self.path.parent() {
                    if dir.file_name().is_some_and(|n| n == ".claude") {
                        let _ = std::fs::remove_dir(dir);
                    }
                }
            }
            return Ok(());
        }
        let text = render(&self.value, self.original.as_deref())?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        mnemo::store::fsutil::atomic_write(&self.path, text.as_bytes())?;
        Ok(())
    }
}

/// `value` pretty-printed with the indentation of `original` (two spaces
/// for a new file) and its final newline (kept or left out as it was).
fn render(value: &Value, original: Option<&str>) -> Result<String> {
    use serde::Serialize as _;
    let indent = original
        .and_then(|t| {
            t.lines()
                .skip(1)
                .map(|l| &l[..l.len() - l.trim_start().len()])
                .find(|i| !i.is_empty())
        })
        .unwrap_or("  ");
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut ser)?;
    let mut text = String::from_utf8(out).context("settings are not UTF-8")?;
    if original.is_none_or(|t| t.ends_with('\n')) {
        text.push('\n');
    }
    Ok(text)
}

/// The object at `key` of `obj`, created when missing; an error when it
/// is something else.
fn object_at<'a>(obj: &'a mut Value, key: &str, file: &str) -> Result<&'a mut Map<String, Value>> {
    let map = obj
        .as_object_mut()
        .ok_or_else(|| UsageError(format!("{file} is not a JSON object")))?;
    let v = map
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    v.as_object_mut().ok_or_else(|| {
        UsageError(format!(
            "`{key}` in {file} is not an object: fix it, then run setup again; nothing was written"
        ))
        .into()
    })
}

/// True for the server entry setup writes: a `mnemo` command whose
/// arguments end in `mcp`.
fn is_our_server(v: &Value) -> bool {
    let command = v.get("command").and_then(Value::as_str).unwrap_or("");
    let program = Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let args: Vec<&str> = v
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    program.starts_with("mnemo") && args.last() == Some(&"mcp")
}

fn add_server(mcp: &mut Value, entry: Value) -> Result<()> {
    let servers = object_at(mcp, "mcpServers", MCP_FILE)?;
    match servers.get_mut(SERVER) {
        Some(existing) if !is_our_server(existing) => Err(UsageError(format!(
            "{MCP_FILE} already has a server named `{SERVER}` that is not `mnemo … mcp`; \
             it was left as it is and nothing was written: rename or remove it, then run setup again"
        ))
        .into()),
        Some(existing) => {
            *existing = entry;
            Ok(())
        }
        None => {
            servers.insert(SERVER.to_string(), entry);
            Ok(())
        }
    }
}

/// Removes setup's server entry; a server `mnemo` that is someone else's
/// stays, and the note says so.
fn remove_server(mcp: &mut Value) -> Result<Option<String>> {
    let Some(servers) = mcp.get_mut("mcpServers") else {
        return Ok(None);
    };
    let Some(map) = servers.as_object_mut() else {
        return Ok(None);
    };
    match map.get(SERVER) {
        None => return Ok(None),
        Some(v) if !is_our_server(v) => {
            return Ok(Some(format!(
            "{MCP_FILE}: the server `{SERVER}` there is not `mnemo … mcp`, so it was left as it is"
        )))
        }
        Some(_) => {}
    }
    map.shift_remove(SERVER);
    if map.is_empty() {
        if let Some(obj) = mcp.as_object_mut() {
            obj.shift_remove("mcpServers");
        }
    }
    Ok(None)
}

/// The event slug of a hook object setup wrote (`session-start`, …), when
/// it is one: a command hook running `… hook claude-code <slug>`.
fn our_hook_slug(hook: &Value) -> Option<&'static str> {
    let command = hook.get("command")?.as_str()?;
    let (_, rest) = command.split_once(" hook claude-code ")?;
    let word = rest.split_whitespace().next()?;
    HOOK_EVENTS
        .iter()
        .map(|(_, slug)| *slug)
        .find(|slug| *slug == word)
}

fn has_our_hook(settings: &Value, event: &str) -> bool {
    settings
        .get("hooks")
        .and_then(|h| h.get(event))
        .and_then(Value::as_array)
        .is_some_and(|groups| {
            groups.iter().any(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_some_and(|hs| hs.iter().any(|h| our_hook_slug(h).is_some()))
            })
        })
}

/// Puts each wanted hook under its event: one already there is left (or
/// brought up to date where it is), a missing one gets a matcher group of
/// its own at the end. Other hooks of the event are not touched.
fn add_hooks(settings: &mut Value, wanted: &[(&str, Value)]) -> Result<()> {
    let hooks = object_at(settings, "hooks", "the settings file")?;
    for (event, hook) in wanted {
        let groups = hooks
            .entry(event.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(groups) = groups.as_array_mut() else {
            return Err(UsageError(format!(
                "`hooks.{event}` in the settings is not a list: fix it, then run setup again; nothing was written"
            ))
            .into());
        };
        let slug = our_hook_slug(hook);
        let mut found = false;
        for group in groups.iter_mut() {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                continue;
            };
            list.retain_mut(|h| {
                if our_hook_slug(h) != slug {
                    return true;
                }
                if found {
                    // A second copy would run twice.
                    return false;
                }
                found = true;
                if h != hook {
                    *h = hook.clone();
                }
                true
            });
        }
        groups.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|l| !l.is_empty())
        });
        if !found {
            groups.push(json!({ "hooks": [hook] }));
        }
    }
    Ok(())
}

/// Removes every hook setup wrote, and the groups, events and `hooks`
/// object that only held them.
fn remove_hooks(settings: &mut Value) -> Result<()> {
    let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let mut emptied = Vec::new();
    for (event, groups) in hooks.iter_mut() {
        let Some(groups) = groups.as_array_mut() else {
            continue;
        };
        let before = groups.len();
        let mut removed = false;
        for group in groups.iter_mut() {
            if let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                let n = list.len();
                list.retain(|h| our_hook_slug(h).is_none());
                if list.len() < n {
                    removed = true;
                    if list.is_empty() {
                        *group = Value::Null;
                    }
                }
            }
        }
        if removed {
            groups.retain(|g| !g.is_null());
            if groups.is_empty() && before > 0 {
                emptied.push(event.clone());
            }
        }
    }
    let removed_any = !emptied.is_empty();
    for e in emptied {
        hooks.shift_remove(&e);
    }
    if removed_any && hooks.is_empty() {
        if let Some(obj) = settings.as_object_mut() {
            obj.shift_remove("hooks");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn quotes_what_a_shell_would_split() {
        assert_eq!(shell_quote("/usr/bin/mnemo"), "/usr/bin/mnemo");
        assert_eq!(shell_quote("/a b/ws"), "'/a b/ws'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn keeps_the_indentation_and_the_final_newline() {
        let v = json!({"a": {"b": 1}});
        assert_eq!(
            render(&v, Some("{\n    \"a\": {}\n}")).unwrap(),
            "{\n    \"a\": {\n        \"b\": 1\n    }\n}"
        );
        assert_eq!(
            render(&v, Some("{\n\t\"a\": 1\n}\n")).unwrap(),
            "{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}\n"
        );
        assert_eq!(
            render(&v, None).unwrap(),
            "{\n  \"a\": {\n    \"b\": 1\n  }\n}\n"
        );
    }

    #[test]
    fn knows_its_own_hooks_by_their_command() {
        let ours = json!({"type": "command", "command": "'/x y/mnemo' --workspace /w hook claude-code stop"});
        assert_eq!(our_hook_slug(&ours), Some("stop"));
        let theirs = json!({"type": "command", "command": "echo hook claude-code stop-watch"});
        assert_eq!(our_hook_slug(&theirs), None);
    }
}
