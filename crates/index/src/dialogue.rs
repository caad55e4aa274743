//! Queries that are dialogue rather than questions.
//!
//! An agent's automatic recall searches with the last few turns of the
//! conversation (`Alice: …` / `Bob: …` lines), in which the need for a memory
//! is often implied by the latest turn. Searched as one text, such a query
//! is mostly old chat: its words and its vector are about everything said,
//! and on a long query the keyword side would even keep only its first
//! (oldest) words. This module reads the query as turns and gives search two
//! readings of it:
//!
//! - the **focus**: the latest turn (with the turn before it when the latest
//!   is too short to say much: "Really? Tell me more");
//! - the **context**: every turn, newest first, so that when the text must
//!   be cut (the keyword side keeps 64 words, an embedding model has an input
//!   limit) the oldest words go first.
//!
//! Speaker tags are dropped from both: a name that starts every line says
//! who spoke, not what about.

/// A query read as dialogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dialogue {
    /// The latest turn, or the last two when the latest is short.
    pub focus: String,
    /// Every turn, newest first, one per line.
    pub context: String,
}

/// A latest turn with fewer words than this is read together with the turn
/// before it.
const MIN_FOCUS_WORDS: usize = 4;
/// Longest speaker name recognised in a tag, in characters.
const MAX_SPEAKER_CHARS: usize = 32;

/// The query as dialogue, when at least two of its lines start with a
/// speaker tag (`Name: …`, `Name：…`); `None` for everything else, which is
/// searched as it is.
pub(crate) fn parse(query: &str) -> Option<Dialogue> {
    let mut turns: Vec<String> = Vec::new();
    let mut tagged = 0;
    for line in query.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match strip_tag(line) {
            Some(text) => {
                tagged += 1;
                turns.push(text.to_string());
            }
            // An untagged line continues the turn before it.
            None => match turns.last_mut() {
                Some(last) => {
                    last.push(' ');
                    last.push_str(line);
                }
                None => turns.push(line.to_string()),
            },
        }
    }
    turns.retain(|t| !t.trim().is_empty());
    if tagged < 2 || turns.len() < 2 {
        return None;
    }
    let last = turns.len() - 1;
    let first_focus = if words(&turns[last]) < MIN_FOCUS_WORDS {
        last - 1
    } else {
        last
    };
    let focus = turns[first_focus..].join("\n");
    let context = turns.iter().rev().cloned().collect::<Vec<_>>().join("\n");
    Some(Dialogue { focus, context })
}

/// What a query asks: a dialogue's focus (its latest turn, speaker tags
/// dropped), or the query itself. A model asked to expand a query reads
/// this, not the chat before it.
pub fn need_of(query: &str) -> String {
    parse(query).map_or_else(|| query.trim().to_string(), |d| d.focus)
}

/// The text after a leading speaker tag, or `None` when the line has none.
/// A tag is a short name (no sentence punctuation, at most four words)
/// followed by `:` or `：`; "Note: …" is a tag too, which does no harm.
fn strip_tag(line: &str) -> Option<&str> {
    let (at, colon) = line
        .char_indices()
        .take(MAX_SPEAKER_CHARS + 1)
        .find(|(_, c)| *c == ':' || *c == '：')?;
    let name = line.get(..at)?.trim();
    let name = name
        .trim_matches(|c| c == '*' || c == '[' || c == ']')
        .trim();
    if name.is_empty()
        || name.split_whitespace().count() > 4
        || name.contains(['.', '!', '?', ',', '。', '，', '！', '？', '"', '/'])
    {
        return None;
    }
    let rest = line.get(at + colon.len_utf8()..)?;
    // "http://…" or "12:30" are not tags.
    if rest.starts_with("//") || rest.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(rest.trim())
}

/// Words in `text`, counting each CJK character as a word.
fn words(text: &str) -> usize {
    let cjk = text.chars().filter(|c| crate::text::is_cjk(*c)).count();
    cjk + text
        .split(|c: char| !c.is_alphanumeric() || crate::text::is_cjk(c))
        .filter(|w| !w.is_empty())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_and_prose_are_not_dialogue() {
        assert_eq!(parse("what did Caroline research?"), None);
        assert_eq!(parse("Note: the deploy key is in vault"), None);
        assert_eq!(parse("line one\nline two"), None);
        assert_eq!(parse("see http://x.y/z\nat 12:30 we met"), None);
    }

    #[test]
    fn tagged_turns_become_focus_and_context() {
        let d = parse(
            "Caroline: Work was long today.\nMelanie: Same here.\nCaroline: Biscuit chewed my new shoes again!",
        )
        .unwrap();
        assert_eq!(d.focus, "Biscuit chewed my new shoes again!");
        assert_eq!(
            d.context,
            "Biscuit chewed my new shoes again!\nSame here.\nWork was long today."
        );
    }

    #[test]
    fn the_need_is_the_focus_or_the_query() {
        assert_eq!(need_of("  What did Ann bake? "), "What did Ann bake?");
        assert_eq!(
            need_of("Ann: we went hiking\nBob: nice!\nAnn: What did I bake on Sunday?"),
            "What did I bake on Sunday?"
        );
    }

    #[test]
    fn a_short_latest_turn_is_read_with_the_one_before() {
        let d = parse("Ann: We went to the lake party last summer\nBob: Oh nice!").unwrap();
        assert_eq!(d.focus, "We went to the lake party last summer\nOh nice!");
    }

    #[test]
    fn cjk_tags_and_untagged_continuations() {
        let d = parse("张曼婷：我今天去了公园\nAI: 你看到了什么？\n那里的樱花开了吗").unwrap();
        assert_eq!(d.focus, "你看到了什么？ 那里的樱花开了吗");
        assert!(d
            .context
            .starts_with("你看到了什么？ 那里的樱花开了吗\n我今天去了公园"));
    }
}
