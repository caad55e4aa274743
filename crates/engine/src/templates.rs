//! The prompts, as Markdown files under `templates/`, and their rendering.

/// System prompt of consolidation.
pub const CONSOLIDATION_PROMPT: &str = include_str!("../templates/consolidate/system.md");
/// User message of consolidation (memory plus excerpt).
pub const CONSOLIDATION_USER: &str = include_str!("../templates/consolidate/user.md");
/// System prompt of fact extraction (the write path of
/// `consolidation_mode = "facts"` and `flush_mode = "facts"`).
pub const FACTS_EXTRACT_PROMPT: &str = include_str!("../templates/facts/extract.md");
/// User message of fact extraction (the excerpt).
pub const FACTS_EXTRACT_USER: &str = include_str!("../templates/facts/extract_user.md");
/// A yes/no question: does a new fact replace a saved one?
pub const FACTS_JUDGE_REPLACES: &str = include_str!("../templates/facts/judge_replaces.md");
/// A yes/no question: does a request retract a saved fact?
pub const FACTS_JUDGE_RETRACTS: &str = include_str!("../templates/facts/judge_retracts.md");
/// System prompt of the memory flush.
pub const FLUSH_PROMPT: &str = include_str!("../templates/flush/system.md");
/// User message that starts the memory flush.
pub const FLUSH_USER: &str = include_str!("../templates/flush/user.md");
/// Instructions of the compaction summary.
pub const SUMMARY_PROMPT: &str = include_str!("../templates/compact/prompt.md");
/// How a summary enters the history.
pub const SUMMARY_MESSAGE: &str = include_str!("../templates/compact/summary.md");
/// How restored files enter the history.
pub const RESTORE_MESSAGE: &str = include_str!("../templates/compact/restore.md");
/// A session note.
pub const SESSION_NOTE: &str = include_str!("../templates/session/note.md");
/// The slug request.
pub const SLUG_PROMPT: &str = include_str!("../templates/session/slug.md");
/// System prompt of the recall side query.
pub const RECALL_PROMPT: &str = include_str!("../templates/recall/select.md");
/// User message of the recall side query.
pub const RECALL_USER: &str = include_str!("../templates/recall/user.md");
/// System prompt of the search re-rank.
pub const RERANK_PROMPT: &str = include_str!("../templates/rerank/system.md");
/// User message of the search re-rank.
pub const RERANK_USER: &str = include_str!("../templates/rerank/user.md");
/// System prompt of the recall's question behind a dialogue.
pub const NEED_PROMPT: &str = include_str!("../templates/recall/need_system.md");
/// User message of that question.
pub const NEED_USER: &str = include_str!("../templates/recall/need_user.md");
/// System prompt of a hypothetical answer to search beside the question.
pub const ANSWER_PROMPT: &str = include_str!("../templates/recall/answer_system.md");
/// User message of that answer.
pub const ANSWER_USER: &str = include_str!("../templates/recall/answer_user.md");
/// System prompt of the re-rank's yes/no judgement of one passage.
pub const JUDGE_PROMPT: &str = include_str!("../templates/rerank/judge_system.md");
/// User message of that judgement.
pub const JUDGE_USER: &str = include_str!("../templates/rerank/judge_user.md");
/// Identity part of the system prompt.
pub const IDENTITY: &str = include_str!("../templates/context/identity.md");

/// Fills `{{name}}` placeholders. Values are inserted once, left to right,
/// so a value that itself contains `{{…}}` is never expanded again.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = after[..end].trim();
                match vars.iter().find(|(k, _)| *k == name) {
                    Some((_, v)) => out.push_str(v),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_once_and_keeps_unknown() {
        assert_eq!(
            render("a {{x}} b {{y}} {{z}}", &[("x", "{{y}}"), ("y", "2")]),
            "a {{y}} b 2 {{z}}"
        );
    }
}
