//! `memory_get`: lines of a Markdown memory file, refused for anything
//! else (session logs, configuration, links out of memory).

use super::*;

impl MemoryIndex {
    /// `memory_get`: lines of a memory file (MEMORY.md, memory/**, extra
    /// paths; Markdown only). `from` is 1-based (default 1); `lines` caps the
    /// count (default: to the end). A missing file gives empty text.
    pub fn get(
        &self,
        path: &str,
        from: Option<usize>,
        lines: Option<usize>,
    ) -> Result<GetResponse> {
        let rel = path.replace('\\', "/");
        let abs = mnemo_core::resolve_in_workspace(self.inner.ws.root(), &rel)?;
        let clean: String = rel
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect::<Vec<_>>()
            .join("/");
        if let Some(source) = &self.inner.source {
            if !scan::is_memory_path(&clean, &self.inner.settings.index) {
                return Err(Self::not_memory(path));
            }
            let bytes = source
                .read(&clean)
                .map_err(|m| IndexError::database(source.location(), m))?
                .unwrap_or_default();
            return Ok(lines_of(&clean, &bytes, from, lines));
        }
        // A link inside memory/ may point at another workspace file (say
        // mnemo.toml): the target must be a memory path too.
        let target_ok = match abs.canonicalize() {
            Ok(real) => {
                let root = self
                    .inner
                    .ws
                    .root()
                    .canonicalize()
                    .unwrap_or_else(|_| self.inner.ws.root().to_path_buf());
                real.strip_prefix(&root).ok().is_some_and(|r| {
                    let r = r.to_string_lossy().replace('\\', "/");
                    scan::is_memory_path(&r, &self.inner.settings.index)
                })
            }
            Err(_) => true, // missing: answered with empty text below
        };
        if !scan::is_memory_path(&clean, &self.inner.settings.index) || !target_ok {
            return Err(Self::not_memory(path));
        }
        // Regular files only, opened without blocking: a FIFO named like a
        // memory file would otherwise hang the call forever.
        let bytes = match mnemo_core::files::read_regular(&abs) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                return Err(IndexError::Forbidden {
                    path: path.to_string(),
                    reason: format!("{e}"),
                });
            }
            Err(e) if mnemo_core::files::names_no_file(&e) => Vec::new(),
            // Named as the caller named it: the server's own folders are
            // none of a client's business.
            Err(e) => return Err(IndexError::io(&clean, e)),
        };
        Ok(lines_of(&clean, &bytes, from, lines))
    }

    fn not_memory(path: &str) -> IndexError {
        IndexError::Forbidden {
            path: path.to_string(),
            reason: "memory_get reads Markdown memory files only: MEMORY.md, memory/**/*.md or a configured \
                     extra path"
                .into(),
        }
    }
}

/// Lines `from` (1-based, default 1) on of `bytes`, at most `lines` of them
/// (default: to the end); a missing document is empty text.
fn lines_of(path: &str, bytes: &[u8], from: Option<usize>, lines: Option<usize>) -> GetResponse {
    let from = from.unwrap_or(1).max(1);
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().collect();
    let total = all.len();
    let start = (from - 1).min(total);
    let end = lines
        .map(|n| start.saturating_add(n).min(total))
        .unwrap_or(total);
    GetResponse {
        path: path.to_string(),
        text: all.get(start..end).unwrap_or_default().join("\n"),
        from,
        lines: end - start,
        total_lines: total,
    }
}
