//! The words the write path's checks compare: words and stems in any
//! script, the content words evidence is checked on, and the cue words
//! that say what a clause does (asks to forget, changes, corrects, negates,
//! greets, confirms), with the clause of a quote they are read in.

use std::collections::HashSet;

use mnemo_store::memory::facts::one_line;

pub(super) use mnemo_core::text::is_cjk;

/// Lower-cased words of `text` (apostrophes split them), each character
/// of a CJK run a word of its own.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() {
            continue;
        }
        if w.chars().any(is_cjk) {
            let mut latin = String::new();
            for c in w.chars() {
                if is_cjk(c) {
                    if !latin.is_empty() {
                        out.push(std::mem::take(&mut latin).to_lowercase());
                    }
                    out.push(c.to_string());
                } else {
                    latin.push(c);
                }
            }
            if !latin.is_empty() {
                out.push(latin.to_lowercase());
            }
        } else {
            out.push(w.to_lowercase());
        }
    }
    out
}

pub(super) const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "am",
    "i",
    "me",
    "my",
    "mine",
    "myself",
    "we",
    "us",
    "our",
    "you",
    "your",
    "he",
    "him",
    "his",
    "she",
    "her",
    "they",
    "them",
    "their",
    "it",
    "its",
    "to",
    "of",
    "in",
    "on",
    "at",
    "for",
    "with",
    "and",
    "or",
    "but",
    "that",
    "this",
    "these",
    "those",
    "there",
    "here",
    "do",
    "does",
    "did",
    "have",
    "has",
    "had",
    "will",
    "would",
    "can",
    "could",
    "should",
    "shall",
    "may",
    "might",
    "must",
    "just",
    "so",
    "very",
    "really",
    "also",
    "then",
    "than",
    "as",
    "by",
    "from",
    "about",
    "into",
    "up",
    "out",
    "over",
    "again",
    "still",
    "too",
    "only",
    "own",
    "some",
    "any",
    "each",
    "more",
    "most",
    "such",
    "what",
    "which",
    "who",
    "whom",
    "whose",
    "when",
    "where",
    "why",
    "how",
    "all",
    "both",
    "if",
    "because",
    "while",
    "s",
    "t",
    "ll",
    "re",
    "ve",
    "d",
    "m",
    "user",
    "users",
    "now",
    "currently",
    "actually",
    "oh",
    "well",
    "yes",
    "yeah",
    "ok",
    "okay",
    "one",
    "not",
    "no",
    "don",
    "doesn",
    "didn",
    "isn",
    "aren",
    "wasn",
    "anymore",
    "longer",
    "like",
    "get",
    "got",
    "go",
    "going",
    "let",
    "lets",
    "please",
    "thanks",
    "thank",
    "hi",
    "hello",
    "hey",
    "的",
    "了",
    "是",
    "我",
    "你",
    "他",
    "她",
    "它",
    "们",
    "在",
    "有",
    "和",
    "就",
    "也",
    "都",
    "很",
    "吗",
    "呢",
    "吧",
    "啊",
    "这",
    "那",
    "个",
    "用",
    "户",
    "还",
    "又",
    "把",
];

/// The stem of a word (English; other words as they are).
pub(super) fn stem(w: &str) -> String {
    if !w.is_ascii() || w.len() <= 3 {
        return w.to_string();
    }
    thread_local! {
        static STEMMER: rust_stemmers::Stemmer =
            rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    }
    STEMMER.with(|s| s.stem(w).into_owned())
}

/// The content words of `text`, stemmed: what evidence is checked on.
pub fn content(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

/// Words a reader cannot make up: numbers and names (capitalised words
/// past a sentence's first), stemmed as [`content`] stems.
pub(super) fn hard_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut first = true;
    for raw in text.split(|c: char| c.is_whitespace()) {
        let w: String = raw.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
        if w.is_empty() {
            continue;
        }
        let capital = w.chars().next().is_some_and(char::is_uppercase) && !first;
        let number = w.chars().any(|c| c.is_ascii_digit());
        if (capital || number) && w.is_ascii() {
            for x in words(&w) {
                if !STOPWORDS.contains(&x.as_str()) {
                    out.push(stem(&x));
                }
            }
        }
        first = raw.ends_with(['.', '!', '?', ':']);
    }
    out
}

/// Share of `needed` found in `have` (1 when nothing is needed).
pub(super) fn support(needed: &[String], have: &HashSet<String>) -> f32 {
    if needed.is_empty() {
        return 1.0;
    }
    needed.iter().filter(|w| have.contains(*w)).count() as f32 / needed.len() as f32
}

/// Words of `text` joined by one space, for "is this inside that".
pub(super) fn flat(text: &str) -> String {
    format!(" {} ", words(text).join(" "))
}

pub(super) fn has_phrase(text_flat: &str, phrases: &[&str]) -> bool {
    phrases.iter().any(|p| {
        let pf = flat(p);
        if p.chars().any(is_cjk) {
            text_flat.contains(pf.trim())
        } else {
            text_flat.contains(&pf)
        }
    })
}

pub(super) const RETRACT_CUES: &[&str] = &[
    "forget",
    "not true",
    "isn't true",
    "is not true",
    "wasn't true",
    "was not true",
    "scratch that",
    "scratch what",
    "disregard",
    "ignore what",
    "never mind that",
    "don't remember",
    "do not remember",
    "delete that",
    "remove that",
    "not the case",
    "忘掉",
    "忘记",
    "忘了",
    "不是真的",
    "别记",
    "不要记",
    "删掉",
];
pub(super) const CHANGE_CUES: &[&str] = &[
    "now",
    "moved",
    "moving",
    "anymore",
    "any more",
    "no longer",
    "switched",
    "changed",
    "these days",
    "new",
    "instead",
    "started",
    "quit",
    "left",
    "became",
    "since then",
    "现在",
    "搬到",
    "搬去",
    "改成",
    "换成",
    "不再",
    "如今",
    "新的",
    "变成",
];
pub(super) const CORRECT_CUES: &[&str] = &[
    "actually",
    "sorry",
    "i meant",
    "i mean",
    "correction",
    "wrong",
    "mistake",
    "my bad",
    "after all",
    "其实",
    "说错",
    "应该是",
    "搞错",
    "更正",
];
pub(super) const NEGATIONS: &[&str] = &[
    "no longer",
    "not",
    "don't",
    "doesn't",
    "didn't",
    "never",
    "anymore",
    "any more",
    "不再",
    "不",
    "没有",
    "没",
];
pub(super) const CONFIRMATIONS: &[&str] = &[
    "yes",
    "yeah",
    "yep",
    "yup",
    "sure",
    "ok",
    "okay",
    "correct",
    "right",
    "exactly",
    "please do",
    "do that",
    "go ahead",
    "sounds good",
    "that's right",
    "that is right",
    "indeed",
    "absolutely",
    "是",
    "对",
    "好",
    "没错",
    "是的",
    "对的",
];
pub(super) const SMALL_TALK: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "thanks",
    "thank you",
    "good morning",
    "good night",
    "good evening",
    "bye",
    "goodbye",
    "see you",
    "talk to you later",
    "how are you",
    "noted",
    "you're welcome",
    "no problem",
    "nice to meet you",
    "ttyl",
    "你好",
    "谢谢",
    "再见",
    "早上好",
    "晚安",
];
pub(super) const ASSISTANT_SUBJECTS: &[&str] = &[
    "assistant",
    "the assistant",
    "ai",
    "the ai",
    "bot",
    "the bot",
    "chatbot",
    "ai companion",
    "the ai companion",
    "you",
    "mnemo",
    "助手",
    "你",
];
/// What a model writes when it takes the assistant's words about itself
/// ("I'm your AI companion") for the user's: the user is a person.
pub(super) const USER_AS_MACHINE: &[&str] = &[
    "user is an ai",
    "user is an artificial intelligence",
    "user is an assistant",
    "user is a virtual assistant",
    "user is a chatbot",
    "user is a bot",
    "user is a language model",
    // The assistant's name taken for the user's ("The user is named AI
    // Companion."); "Ai" alone is a person's name too, so only the
    // machine's full names.
    "user is named ai companion",
    "user is called ai companion",
    "user s name is ai companion",
    "user is named ai assistant",
    "user is called ai assistant",
    "user s name is ai assistant",
    "user is named assistant",
    "user is called assistant",
    "user s name is assistant",
];
/// How a fact about the assistant begins when a model writes it as
/// memory ("The AI companion responds warmly."): the assistant is not
/// the user, whatever subject the model gave. Not "the AI" or "the bot"
/// alone: "The AI startup the user works for" is the user's.
pub(super) const MACHINE_OPENINGS: &[&str] = &[
    "the assistant",
    "the ai companion",
    "the ai assistant",
    "ai companion",
    "your ai companion",
    "your assistant",
];
pub(super) const TRANSIENT: &[&str] = &[
    "is typing",
    "is running",
    "is compiling",
    "is building",
    "built successfully",
    "build passed",
    "build succeeded",
    "build failed",
    "tests pass",
    "tests passed",
    "test passed",
    "is loading",
    "is waiting",
    "is online",
    "is offline",
    "is asking",
    "asked about",
    "asks about",
    "wants to know",
    "is wondering",
    "is thinking",
    "is looking at",
    "is reading",
    "is here",
    "just said",
    "said hello",
    "says hello",
    "greeted",
    "is chatting",
    "is talking to",
    "started the conversation",
    "is happy to help",
    "正在输入",
    "正在运行",
];
pub(super) const USER_WORDS: &[&str] = &[
    "user",
    "the user",
    "i",
    "me",
    "myself",
    "the speaker",
    "speaker",
    "用户",
    "我",
    "本人",
];

pub(super) fn first_person(text: &str) -> bool {
    let w = words(text);
    w.iter().any(|x| {
        matches!(
            x.as_str(),
            "i" | "my" | "me" | "mine" | "myself" | "we" | "our"
        )
    }) || text.trim_start().starts_with('我')
}

/// People a user speaks of by relation: "my sister Ana lives in Madrid"
/// is about the sister, not the user.
pub(super) const RELATIONS: &[&str] = &[
    "sister",
    "brother",
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "wife",
    "husband",
    "partner",
    "boyfriend",
    "girlfriend",
    "fiance",
    "fiancee",
    "son",
    "daughter",
    "kid",
    "child",
    "friend",
    "boss",
    "colleague",
    "coworker",
    "neighbour",
    "neighbor",
    "cousin",
    "aunt",
    "uncle",
    "grandma",
    "grandmother",
    "grandpa",
    "grandfather",
    "niece",
    "nephew",
    "roommate",
    "姐姐",
    "妹妹",
    "哥哥",
    "弟弟",
    "妈妈",
    "爸爸",
    "母亲",
    "父亲",
    "妻子",
    "丈夫",
    "老婆",
    "老公",
    "朋友",
    "儿子",
    "女儿",
    "同事",
    "老板",
    "室友",
];

/// The person a sentence is about when the user speaks of someone by
/// relation ("The user's sister Ana lives ...", "my sister Ana lives",
/// "我姐姐住在"): `the user's sister Ana`, or `None`.
pub(super) fn relation_subject(text: &str) -> Option<String> {
    let t = one_line(text);
    let lower = t.to_lowercase();
    for prefix in ["我的", "我", "用户的"] {
        if let Some(rest) = t.trim().strip_prefix(prefix) {
            if let Some(r) = RELATIONS
                .iter()
                .find(|r| r.chars().any(is_cjk) && rest.starts_with(**r))
            {
                return Some(format!("用户的{r}"));
            }
        }
    }
    let w: Vec<&str> = lower.split_whitespace().collect();
    let raw: Vec<&str> = t.split_whitespace().collect();
    let after = match w.as_slice() {
        ["the", "user's", ..] => 2,
        ["my", ..] => 1,
        _ => return None,
    };
    let rel = w.get(after)?.trim_matches(|c: char| !c.is_alphanumeric());
    if !RELATIONS.contains(&rel) {
        return None;
    }
    // A name right after the relation ("my sister Ana").
    let name = raw
        .get(after + 1)
        .map(|n| n.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|n| n.chars().next().is_some_and(char::is_uppercase));
    Some(match name {
        Some(n) => format!("the user's {rel} {n}"),
        None => format!("the user's {rel}"),
    })
}

/// The clause of `quote` that holds `value` (clauses end at `,;.!?`, a
/// dash, "but", "and"), else the whole quote: a negation or a cue counts
/// only in the clause that says the value.
pub(super) fn clause_of(quote: &str, value: &str) -> String {
    let v = content(value);
    if v.is_empty() {
        return quote.to_string();
    }
    let mut clauses: Vec<String> = Vec::new();
    for part in quote.split([',', ';', '.', '!', '?', '，', '；', '。', '！', '？', '—']) {
        let mut rest = part.to_string();
        for sep in [" but ", " and ", " though ", " however "] {
            if let Some((a, b)) = rest.clone().split_once(sep) {
                clauses.push(a.to_string());
                rest = b.to_string();
            }
        }
        clauses.push(rest);
    }
    clauses
        .into_iter()
        .find(|c| {
            let have: HashSet<String> = content(c).into_iter().collect();
            v.iter().all(|w| have.contains(w))
        })
        .unwrap_or_else(|| quote.to_string())
}

/// "By the way, my gym locker number is now 14" said by the user: the
/// attribute in the user's own words (`gym locker number`), the fact in
/// the third person (`The user's gym locker number is 14.`) and the value
/// (`14`), made by code so that nothing the user named is lost in a
/// model's paraphrase ("The user has a storage box labeled L1x" for "my
/// storage box 1 label is L1x"). `None` unless the clause holding `value`
/// is a plain "my A is B" in the present (no negation, no relation's
/// possession, B at most twelve words) and B is what the model proposed:
/// its value's numbers and names ("updated to C9"), else all its words,
/// else the numbers and names of its sentence (a value of "locker number"
/// in "The user's gym locker number has been updated to 27.").
pub(super) fn own_statement(
    quote: &str,
    value: &str,
    fact: &str,
) -> Option<(String, String, String)> {
    let (attribute, text, tail) = my_a_is_b(&clause_of(quote, value))?;
    let have: HashSet<String> = content(&tail).into_iter().collect();
    let within = |w: &[String]| !w.is_empty() && w.iter().all(|x| have.contains(x));
    (within(&hard_words(value)) || within(&content(value)) || within(&hard_words(fact)))
        .then_some((attribute, text, tail))
}

/// A clause that is a plain "my A is B" in the present: A, "The user's A
/// is B." and B (no negation, no relation's possession but of an event,
/// "my cousin's wedding", A at most six words and B at most twelve).
pub(super) fn my_a_is_b(clause: &str) -> Option<(String, String, String)> {
    if has_phrase(&flat(clause), NEGATIONS) {
        return None;
    }
    if clause.chars().any(is_cjk) {
        return wo_de_a_shi_b(clause).or_else(|| zui_xi_huan(clause));
    }
    let (attribute, verb, tail) = a_is_b(clause, "my", 6)?;
    Some((
        attribute.clone(),
        format!("The user's {attribute} {verb} {tail}."),
        tail,
    ))
}

/// A correction that names its attribute with "the" ("No wait, the
/// wedding is in Lyon after all"): A, the clause as said ("The wedding is
/// in Lyon.") and B. Only where a correction cue says the user is fixing
/// what they said: else "the" is anyone's.
pub(super) fn corrected_the_a_is_b(sentence: &str) -> Option<(String, String, String)> {
    let f = flat(sentence);
    if !has_phrase(&f, CORRECT_CUES) || has_phrase(&f, NEGATIONS) || sentence.chars().any(is_cjk) {
        return None;
    }
    let (attribute, verb, tail) = a_is_b(sentence, "the", 4)?;
    let tail = tail
        .trim_end_matches(" after all")
        .trim_end_matches(" then")
        .to_string();
    Some((
        attribute.clone(),
        format!("The {attribute} {verb} {tail}."),
        tail,
    ))
}

/// A word without the punctuation around it (an apostrophe kept:
/// "we're", "cousin's"), lower-cased.
pub(super) fn bare(w: &str) -> String {
    w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
        .to_lowercase()
}

/// "<det> A is B": A (at most `most` words, no pronoun, no relation's
/// possession but of an event), the verb and B (at most twelve words, past
/// "now" and "still").
fn a_is_b(clause: &str, det: &str, most: usize) -> Option<(String, String, String)> {
    let raw: Vec<&str> = clause.split_whitespace().collect();
    let my = raw.iter().position(|w| bare(w) == det)?;
    let verb = my
        + 1
        + raw[my + 1..]
            .iter()
            .position(|w| matches!(bare(w).as_str(), "is" | "are"))?;
    let attribute: Vec<&str> = raw[my + 1..verb].to_vec();
    // B ends with its clause ("L1x, and I work as a nurse": L1x).
    let mut tail: Vec<&str> = Vec::new();
    for w in &raw[verb + 1..] {
        tail.push(w);
        if w.ends_with([',', ';']) {
            break;
        }
    }
    while tail
        .first()
        .is_some_and(|w| matches!(bare(w).as_str(), "now" | "currently" | "still"))
    {
        tail.remove(0);
    }
    // "my cousin's wedding" is an event of the user's life; "my sister's
    // city" is the sister's.
    let event = attribute
        .last()
        .is_some_and(|w| EVENT_WORDS.contains(&bare(w).as_str()));
    let relation = attribute
        .iter()
        .any(|w| RELATIONS.contains(&bare(w).trim_end_matches("'s")));
    if attribute.is_empty()
        || attribute.len() > most
        || tail.is_empty()
        || tail.len() > 12
        || (relation && !event)
        || attribute.iter().any(|w| {
            matches!(
                bare(w).as_str(),
                "i" | "you" | "and" | "or" | "it" | "this" | "that"
            )
        })
    {
        return None;
    }
    let attribute = attribute.join(" ");
    let attribute = attribute.trim_matches(|c: char| !c.is_alphanumeric());
    let tail = tail.join(" ");
    let tail = tail.trim_end_matches(|c: char| !c.is_alphanumeric() && c != ')' && c != '"');
    Some((attribute.to_string(), bare(raw[verb]), tail.to_string()))
}

/// Words that say someone went somewhere, not that they live there.
pub(super) const VISIT_WORDS: &[&str] = &[
    "went",
    "go",
    "goes",
    "going",
    "visit",
    "visited",
    "visiting",
    "trip",
    "travel",
    "travelled",
    "traveled",
    "walk",
    "walked",
    "vacation",
    "holiday",
    "tour",
    "去了",
    "旅游",
    "参观",
];

/// Words that say where someone lives.
pub(super) const HOME_WORDS: &[&str] = &[
    "live", "lives", "living", "lived", "home", "moved", "move", "based", "reside", "resides",
    "住", "搬",
];

/// True when `text` says someone went somewhere and nothing says they
/// live there ("The user went to a park" is no home city).
pub(super) fn a_visit(text: &str) -> bool {
    let f = flat(text);
    has_phrase(&f, VISIT_WORDS) && !has_phrase(&f, HOME_WORDS)
}

/// Events whose place a model may call a "location".
const EVENT_WORDS: &[&str] = &[
    "wedding",
    "party",
    "meeting",
    "conference",
    "concert",
    "festival",
    "ceremony",
    "birthday",
    "reunion",
    "match",
    "game",
    "exhibition",
    "appointment",
    "interview",
    "funeral",
    "婚礼",
    "聚会",
    "会议",
];

/// The event `text` places somewhere when nothing in it says someone
/// lives there ("the wedding is in Lyon after all": `wedding`).
pub(super) fn placed_event(text: &str) -> Option<&'static str> {
    let f = flat(text);
    if has_phrase(&f, HOME_WORDS) {
        return None;
    }
    EVENT_WORDS.iter().copied().find(|e| has_phrase(&f, &[e]))
}

/// The Chinese "我的A是B" (or "我最喜欢的A是B"): A, "用户的A是B。" and B.
fn wo_de_a_shi_b(clause: &str) -> Option<(String, String, String)> {
    let t = clause.trim().trim_end_matches(['。', '！', '.', '!']);
    let (head, rest) = ["我最喜欢的", "我的"]
        .iter()
        .find_map(|p| t.find(p).map(|i| (*p, &t[i + p.len()..])))?;
    let (attribute, value) = rest.split_once('是')?;
    let (attribute, value) = (attribute.trim(), value.trim());
    let short = |x: &str, n: usize| !x.is_empty() && x.chars().count() <= n;
    if !short(attribute, 8) || !short(value, 12) || has_phrase(&flat(t), NEGATIONS) {
        return None;
    }
    let (attribute, text) = if head == "我的" {
        (
            attribute.to_string(),
            format!("用户的{attribute}是{value}。"),
        )
    } else {
        (
            format!("最喜欢的{attribute}"),
            format!("用户最喜欢的{attribute}是{value}。"),
        )
    };
    Some((attribute, text, value.to_string()))
}

/// "其实我现在最喜欢靛青色了。": a favourite said without its noun, read as
/// a colour when the value is one (Chinese colour words end in 色):
/// 最喜欢的颜色, "用户最喜欢的颜色是靛青色。" and the colour.
fn zui_xi_huan(clause: &str) -> Option<(String, String, String)> {
    let t = clause.trim().trim_end_matches(['。', '！', '.', '!']);
    let (before, value) = t.split_once("最喜欢")?;
    let value = value.trim().trim_end_matches('了').trim();
    let short = !value.is_empty() && value.chars().count() <= 6;
    let colour = short
        && value.ends_with('色')
        && value.chars().all(is_cjk)
        && !value.contains(['的', '是']);
    (colour && before.contains('我') && !has_phrase(&flat(t), NEGATIONS)).then(|| {
        (
            "最喜欢的颜色".to_string(),
            format!("用户最喜欢的颜色是{value}。"),
            value.to_string(),
        )
    })
}
