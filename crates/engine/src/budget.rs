//! Recall within a token budget: what an agent pays for memory is the
//! tokens recall puts in its prompt, so the best hits are cut to their
//! useful lines, a hit that says nothing an earlier one did not is left
//! out, and nothing goes past the budget. Tokens are counted by script
//! ([`mnemo_tokens::estimate_by_script`]), so a Chinese passage costs what
//! it costs.

use std::collections::HashSet;

use mnemo_tokens::estimate_by_script;

use crate::rerank::cut_passage;

/// How many characters one hit may keep under a budget: enough for a few
/// lines, so that one long passage does not spend it all.
pub const BUDGET_HIT_CHARS: usize = 480;

/// Below this many tokens left, a snippet says too little to be worth its
/// place.
const LEAST_TOKENS: usize = 10;

/// Fits `hits`, best first, into `tokens`: each snippet cut to its lines
/// and sentences that share the most words with `query` ([`cut_passage`]),
/// a hit whose every line an earlier hit already gave dropped, and the rest
/// dropped once the budget is spent. `snippet` gives a hit's text (search
/// hits of any backend, or anything else with a text). Returns the tokens
/// the kept snippets cost.
pub fn fit_budget<T>(
    hits: &mut Vec<T>,
    query: &str,
    tokens: usize,
    snippet: impl Fn(&mut T) -> &mut String,
) -> usize {
    let mut left = tokens;
    let mut seen = Said::default();
    hits.retain_mut(|hit| {
        if left < LEAST_TOKENS {
            return false;
        }
        let text = snippet(hit);
        let Some(cut) = cut_to(query, text, left) else {
            return false;
        };
        if !seen.adds(&cut) {
            return false;
        }
        left = left.saturating_sub(estimate_by_script(&cut));
        *text = cut;
        true
    });
    tokens - left
}

/// The lines (and cut pieces) given so far, normalised: a passage whose
/// every line was given already says nothing new.
#[derive(Default)]
struct Said(HashSet<String>);

impl Said {
    /// Records `text`'s lines (headings aside); false, recording nothing,
    /// when none is new.
    fn adds(&mut self, text: &str) -> bool {
        // A cut passage joins pieces that were apart with " … ".
        let said: Vec<String> = text
            .split(['\n', '…'])
            .map(|l| l.trim_start_matches(['-', '*', ' ']).trim())
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                l.split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .to_lowercase()
            })
            .collect();
        if said.iter().all(|l| self.0.contains(l)) {
            return false;
        }
        self.0.extend(said);
        true
    }
}

/// What recall selected: a memory file (the side model's choice) or a
/// passage of one (what memory search found).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recall {
    /// Workspace-relative path of the file.
    pub path: String,
    /// How the prompt names it: the path, or a passage's citation
    /// (`path#Lx-Ly`).
    pub label: String,
    /// The file's text, or the passage's lines.
    pub text: String,
    /// A passage: cut like a search hit under a budget, never shown whole
    /// past [`BUDGET_HIT_CHARS`].
    pub passage: bool,
}

/// A citation's path and lines: `memory/a.md#L12-L15` (or `#L12-15`,
/// `#L12`); `None` when `s` names no line range (a `#L` that is not one
/// stays part of a name).
pub fn split_citation(s: &str) -> Option<(&str, usize, usize)> {
    let (path, range) = s.rsplit_once("#L")?;
    let (a, b) = range.split_once('-').unwrap_or((range, range));
    let a: usize = a.trim().parse().ok()?;
    let b: usize = b.trim().trim_start_matches('L').parse().ok()?;
    (a >= 1 && b >= a).then_some((path, a, b))
}

/// Lines `first..=last` (1-based) of `text`: what a citation cites.
pub fn cited_lines(text: &str, first: usize, last: usize) -> String {
    text.lines()
        .skip(first.saturating_sub(1))
        .take((last + 1).saturating_sub(first.max(1)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A [`Recall`] as the prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recalled {
    /// Workspace-relative path of the file.
    pub path: String,
    /// The path, or the passage's citation.
    pub label: String,
    /// What is shown.
    pub text: String,
    /// A file shown as its lines nearest the query: it did not fit whole.
    pub excerpt: bool,
}

/// Fits what recall selected, in its order, into `tokens`: a file that
/// fits in what is left (and in `file_tokens`) is shown whole, a longer
/// one as its lines and sentences that share the most words with `query`;
/// a passage is cut as [`fit_budget`] cuts a hit, and left out when it
/// says nothing an earlier one did not; nothing once the budget is spent.
/// A file of a few facts costs what it says; a long session note, what it
/// says about this turn.
pub fn fit_recall(
    query: &str,
    items: Vec<Recall>,
    tokens: usize,
    file_tokens: usize,
) -> Vec<Recalled> {
    let mut left = tokens;
    let mut seen = Said::default();
    let mut out = Vec::new();
    for item in items {
        let room = left.min(file_tokens);
        if room < LEAST_TOKENS {
            break;
        }
        let text = item.text.trim();
        let (shown, excerpt) = if item.passage {
            (cut_to(query, text, room).filter(|c| seen.adds(c)), false)
        } else if estimate_by_script(text) <= room {
            seen.adds(text);
            (Some(text.to_string()), false)
        } else {
            (cut_within(query, text, room, room.saturating_mul(4)), true)
        };
        let Some(shown) = shown.filter(|t| !t.is_empty()) else {
            continue;
        };
        left = left.saturating_sub(estimate_by_script(&shown));
        out.push(Recalled {
            path: item.path,
            label: item.label,
            text: shown,
            excerpt,
        });
    }
    out
}

/// `text` cut for a budget with `left` tokens: at most
/// [`BUDGET_HIT_CHARS`] characters, fewer when its script makes that cost
/// more than is left; `None` when nothing fits.
fn cut_to(query: &str, text: &str, left: usize) -> Option<String> {
    cut_within(query, text, left, BUDGET_HIT_CHARS)
}

/// `text` cut to at most `chars` characters that cost at most `left`
/// tokens; `None` when nothing fits.
fn cut_within(query: &str, text: &str, left: usize, chars: usize) -> Option<String> {
    let mut chars = chars;
    loop {
        let cut = cut_passage(query, text, chars);
        let cost = estimate_by_script(&cut);
        if cost <= left {
            return Some(cut).filter(|c| !c.trim().is_empty());
        }
        // Shrink in proportion to the overrun; a passage that cannot be cut
        // below what is left is not given.
        let next = chars * left / cost.max(1);
        if next >= chars || next < LEAST_TOKENS {
            return None;
        }
        chars = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(text: &str) -> String {
        text.to_string()
    }

    fn fit(hits: &mut Vec<String>, query: &str, tokens: usize) -> usize {
        fit_budget(hits, query, tokens, |h| h)
    }

    #[test]
    fn the_budget_holds_in_every_script() {
        let en = "Melanie signed up for a pottery class last week. ".repeat(20);
        let zh = "卡罗琳上周报名参加了陶艺课，她很喜欢。".repeat(30);
        for text in [en, zh] {
            let mut hits = vec![hit(&text), hit(&format!("{text} again")), hit(&text)];
            let spent = fit(&mut hits, "pottery 陶艺", 150);
            let counted: usize = hits.iter().map(|h| estimate_by_script(h)).sum();
            assert_eq!(spent, counted);
            assert!(spent <= 150, "{spent}");
            assert!(!hits.is_empty());
        }
    }

    #[test]
    fn a_hit_that_says_nothing_new_is_left_out() {
        let mut hits = vec![
            hit("- Caroline went to a support group."),
            hit("- caroline went to  a support group."),
            hit("- Melanie paints."),
        ];
        fit(&mut hits, "support group", 500);
        let kept: Vec<&str> = hits.iter().map(String::as_str).collect();
        assert_eq!(
            kept,
            ["- Caroline went to a support group.", "- Melanie paints."]
        );
    }

    #[test]
    fn recalled_files_fit_whole_or_as_excerpts() {
        let small = "- Caroline drinks oolong tea.".to_string();
        let mut long = String::new();
        for i in 0..200 {
            long.push_str(&format!("- Day {i}: we talked about the weather.\n"));
        }
        long.push_str("- Melanie signed up for a pottery class.\n");
        let file = |path: &str, text: &str| Recall {
            path: path.into(),
            label: path.into(),
            text: text.into(),
            passage: false,
        };
        let files = vec![
            file("memory/tea.md", &small),
            file("memory/notes.md", &long),
            file("memory/more.md", "- Oolong on Sundays."),
        ];
        let shown = fit_recall(
            "Which class did Melanie sign up for?",
            files.clone(),
            200,
            5_000,
        );
        assert_eq!(shown.len(), 3);
        assert_eq!(shown[0].text, small);
        assert!(!shown[0].excerpt);
        assert!(shown[1].excerpt);
        assert!(shown[1].text.contains("pottery class"), "{}", shown[1].text);
        let spent: usize = shown.iter().map(|f| estimate_by_script(&f.text)).sum();
        assert!(spent <= 200, "{spent}");
        // Without a budget to speak of, files are whole up to file_tokens.
        let whole = fit_recall("pottery", files, usize::MAX, 5_000);
        assert!(whole.iter().all(|f| !f.excerpt));
        // Spent: nothing more is shown.
        assert!(fit_recall("tea", vec![file("a.md", &small)], 5, 5_000).is_empty());
    }

    #[test]
    fn citations_split_into_path_and_lines() {
        assert_eq!(
            split_citation("memory/a.md#L12-L15"),
            Some(("memory/a.md", 12, 15))
        );
        assert_eq!(
            split_citation("memory/a.md#L3-4"),
            Some(("memory/a.md", 3, 4))
        );
        assert_eq!(
            split_citation("memory/a.md#L7"),
            Some(("memory/a.md", 7, 7))
        );
        assert_eq!(split_citation("memory/a.md"), None);
        assert_eq!(split_citation("memory/#Lobby.md"), None);
        assert_eq!(split_citation("memory/a.md#L5-L2"), None);
        assert_eq!(split_citation("memory/a.md#L0-L2"), None);
        assert_eq!(cited_lines("a\nb\nc\nd", 2, 3), "b\nc");
        assert_eq!(cited_lines("a\nb", 2, 9), "b");
    }

    #[test]
    fn recalled_passages_are_cut_and_never_repeated() {
        let passage = |label: &str, text: &str| Recall {
            path: "memory/notes.md".into(),
            label: label.into(),
            text: text.into(),
            passage: true,
        };
        let long = format!(
            "{}- Melanie signed up for a pottery class.",
            "- The weather was fine that day.\n".repeat(40)
        );
        let shown = fit_recall(
            "Which class did Melanie sign up for?",
            vec![
                passage("memory/notes.md#L1-L41", &long),
                passage(
                    "memory/notes.md#L41-L41",
                    "- Melanie signed up for a pottery class.",
                ),
                passage("memory/notes.md#L50-L50", "- Caroline paints."),
            ],
            1_000,
            5_000,
        );
        let labels: Vec<&str> = shown.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            ["memory/notes.md#L1-L41", "memory/notes.md#L50-L50"]
        );
        assert!(shown[0].text.contains("pottery class"));
        assert!(shown[0].text.chars().count() <= BUDGET_HIT_CHARS);
    }

    #[test]
    fn the_lines_that_share_the_query_are_kept() {
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&format!("Line {i} talks about the weather today.\n"));
        }
        text.push_str("Melanie signed up for a pottery class.\n");
        let mut hits = vec![hit(&text)];
        fit(&mut hits, "What class did Melanie sign up for?", 1000);
        assert!(hits[0].contains("pottery class"), "{}", hits[0]);
        assert!(hits[0].chars().count() <= BUDGET_HIT_CHARS);
    }
}
