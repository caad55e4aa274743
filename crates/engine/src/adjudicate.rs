//! What the code decides on the write path, so that a small model's
//! answer is only ever a proposal ([`crate::extract`] asks for it):
//!
//! - **Evidence** ([`check`]): a proposed fact is stored only when a
//!   message of the round says it. Its quote must be in a message (the
//!   model's pointer; the code finds which), its value's words must be in
//!   that message (or in the assistant message a user's "yes" confirms),
//!   and every number and name of its sentence must be there too. A
//!   sentence that drifts from the message (first person, a copy of the
//!   message, words the message does not say) is written again from the
//!   subject, attribute and value, which were checked; a fact that cannot
//!   be is refused, with why.
//! - **Junk**: greetings and thanks, the assistant talking about itself,
//!   what the assistant said that the user never confirmed, questions, and
//!   states that hold for a moment ("is typing", "the build passed") are
//!   not stored.
//! - **Kind by cue words**: a quote that asks to forget or says something
//!   is not true is a retraction, one that says "now", "moved", "no
//!   longer" is a change, "actually", "I meant" a correction, whatever the
//!   model labelled it; a quote that negates what its fact says ("I no
//!   longer eat meat" -> "The user eats meat") retracts the fact instead
//!   of storing it.
//! - **Dates** ([`crate::dates`]): relative expressions ("last week",
//!   上周) are resolved against the message's own timestamp; the fact
//!   carries absolute dates and starts (`since`) on the day it names.
//! - **Keys** ([`subject_key`], [`attribute_key`]): who a fact is about
//!   ("user" for the user, whatever the model called them) and which of
//!   their attributes, normalised with a table of common attributes
//!   (home city = lives = residence = 住在 ...) and word stems.
//! - **Decisions** ([`decide`]): a fact that says what a current fact says
//!   adds its source to that fact; a retraction ends the current facts of
//!   its subject and attribute; a change or correction, or a new value of
//!   an attribute that holds one value (a home city, a job, a number),
//!   ends the current facts of the same subject and attribute, replaced by
//!   it; an attribute that holds many values (pets, hobbies) gains one.
//!   Only where the code cannot tell (an attribute it does not know,
//!   facts of the same subject whose attributes are alike but not the
//!   same) does the model answer one yes/no question per pair, and only
//!   those pairs can be ended. A fact about someone else never ends a
//!   fact about the user.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, NaiveDate};
use mnemo_core::{Message, Role};
use mnemo_store::memory::facts::{one_line, Fact, FactsFile};
use serde::Serialize;

use crate::extract::{Proposed, Question};

/// Judge questions one round may ask at most (each is a model call).
pub const MAX_QUESTIONS: usize = 8;
/// Pairs asked about per new fact at most.
const MAX_PAIRS: usize = 3;

/// What a fact does, as the code reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A fact.
    States,
    /// A new value that replaces an earlier one.
    Changes,
    /// A fix of something said wrongly.
    Corrects,
    /// Asks to forget something, or says it is not true.
    Retracts,
}

/// A proposed fact that passed the checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checked {
    /// The sentence to store (third person, absolute dates).
    pub text: String,
    /// Who, as the model named them (`user` for the user).
    pub subject: String,
    /// Who, normalised.
    pub subject_key: String,
    /// What about them, as the model named it.
    pub attribute: String,
    /// What about them, normalised.
    pub attribute_key: String,
    /// Whether the attribute holds one value (`None`: unknown).
    pub single: Option<bool>,
    /// The value.
    pub value: String,
    /// What it does.
    pub kind: Kind,
    /// The message (index into the round's messages) that says it.
    pub message: usize,
    /// The words of that message that say it.
    pub evidence: String,
    /// The day it became true.
    pub since: NaiveDate,
    /// The day it was said.
    pub said: NaiveDate,
    /// The model's sentence was replaced by one made from the checked
    /// parts.
    pub rewritten: bool,
}

/// A proposal that was not stored, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The proposed sentence (or value).
    pub fact: String,
    /// Why it was not stored.
    pub why: String,
    /// The message it names, when one was found.
    pub message: Option<usize>,
    /// The words the model quoted for it.
    pub quote: String,
}

// ---------------------------------------------------------------- words

/// True for characters of scripts written without spaces between words.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF
        | 0xAC00..=0xD7AF | 0x20000..=0x2FA1F)
}

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

const STOPWORDS: &[&str] = &[
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
fn stem(w: &str) -> String {
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
fn hard_words(text: &str) -> Vec<String> {
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
fn support(needed: &[String], have: &HashSet<String>) -> f32 {
    if needed.is_empty() {
        return 1.0;
    }
    needed.iter().filter(|w| have.contains(*w)).count() as f32 / needed.len() as f32
}

/// Words of `text` joined by one space, for "is this inside that".
fn flat(text: &str) -> String {
    format!(" {} ", words(text).join(" "))
}

fn has_phrase(text_flat: &str, phrases: &[&str]) -> bool {
    phrases.iter().any(|p| {
        let pf = flat(p);
        if p.chars().any(is_cjk) {
            text_flat.contains(pf.trim())
        } else {
            text_flat.contains(&pf)
        }
    })
}

// ---------------------------------------------------------------- cues

const RETRACT_CUES: &[&str] = &[
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
const CHANGE_CUES: &[&str] = &[
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
const CORRECT_CUES: &[&str] = &[
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
const NEGATIONS: &[&str] = &[
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
const CONFIRMATIONS: &[&str] = &[
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
const SMALL_TALK: &[&str] = &[
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
const ASSISTANT_SUBJECTS: &[&str] = &[
    "assistant",
    "the assistant",
    "ai",
    "the ai",
    "bot",
    "the bot",
    "chatbot",
    "you",
    "mnemo",
    "助手",
    "你",
];
const TRANSIENT: &[&str] = &[
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
const USER_WORDS: &[&str] = &[
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

fn first_person(text: &str) -> bool {
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
const RELATIONS: &[&str] = &[
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
fn relation_subject(text: &str) -> Option<String> {
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
fn clause_of(quote: &str, value: &str) -> String {
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

// ---------------------------------------------------------------- keys

/// Who a fact is about, normalised: `user` for the user (whatever the
/// model called them, their name included when `user_names` has it), else
/// the content words of the name or relation.
pub fn subject_key(subject: &str, user_names: &[String]) -> String {
    let lower = one_line(subject).to_lowercase();
    let lower = lower.trim().trim_matches(|c: char| !c.is_alphanumeric());
    if lower.is_empty() || USER_WORDS.contains(&lower) {
        return "user".into();
    }
    if user_names.iter().any(|n| n.to_lowercase() == lower) {
        return "user".into();
    }
    // "the user's sister", "my sister", "用户的妹妹" are the sister.
    let mut rest = lower;
    for p in [
        "the user's ",
        "the users ",
        "user's ",
        "the user ",
        "my ",
        "the ",
        "用户的",
        "我的",
    ] {
        rest = rest.strip_prefix(p).unwrap_or(rest);
    }
    let w = words(rest);
    let key: Vec<String> = w
        .into_iter()
        .filter(|x| !STOPWORDS.contains(&x.as_str()) && x != "的")
        .collect();
    if key.is_empty() {
        "user".into()
    } else {
        key.join(" ")
    }
}

/// True when two subject keys name the same one: equal, or (neither the
/// user) sharing a word.
pub fn same_subject(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if a == "user" || b == "user" {
        return false;
    }
    let wa: HashSet<&str> = a.split(' ').collect();
    b.split(' ').any(|w| wa.contains(w))
}

/// Common attributes: the key, whether it holds one value, and the words
/// that name it (any one, stemmed, matched as whole words of the
/// attribute). Measured on the dev sets' statements: these are the
/// attributes people change most (where they live, work, eat, who with).
const ATTRIBUTES: &[(&str, bool, &[&str])] = &[
    (
        "home city",
        true,
        &[
            "home city",
            "city",
            "home",
            "hometown now",
            "location",
            "residence",
            "lives",
            "live",
            "lives in",
            "living",
            "current city",
            "where lives",
            "place of residence",
            "country of residence",
            "based",
            "住",
            "住在",
            "居住地",
            "住址城市",
            "城市",
        ],
    ),
    (
        "job",
        true,
        &[
            "job",
            "occupation",
            "profession",
            "work",
            "works as",
            "role",
            "position",
            "career",
            "job title",
            "title",
            "工作",
            "职业",
        ],
    ),
    (
        "employer",
        true,
        &[
            "employer",
            "company",
            "workplace",
            "works at",
            "works for",
            "workplace name",
            "公司",
            "单位",
        ],
    ),
    (
        "diet",
        true,
        &[
            "diet",
            "eating",
            "eats",
            "food preference",
            "dietary preference",
            "food",
            "eating habits",
            "vegetarian",
            "vegan",
            "饮食",
        ],
    ),
    (
        "partner",
        true,
        &[
            "partner",
            "spouse",
            "wife",
            "husband",
            "girlfriend",
            "boyfriend",
            "fiance",
            "fiancee",
            "伴侣",
            "妻子",
            "丈夫",
            "女朋友",
            "男朋友",
            "老婆",
            "老公",
        ],
    ),
    ("age", true, &["age", "years old", "年龄", "岁"]),
    ("name", true, &["name", "called", "名字"]),
    (
        "birthday",
        true,
        &["birthday", "date of birth", "birth date", "生日"],
    ),
    ("email", true, &["email", "email address", "e-mail", "邮箱"]),
    (
        "phone number",
        true,
        &["phone", "phone number", "mobile", "cell", "电话", "手机号"],
    ),
    (
        "pet",
        false,
        &["pet", "pets", "dog", "cat", "宠物", "狗", "猫"],
    ),
    (
        "hobby",
        false,
        &[
            "hobby",
            "hobbies",
            "pastime",
            "interest",
            "interests",
            "爱好",
            "兴趣",
        ],
    ),
    (
        "child",
        false,
        &[
            "child", "children", "kid", "kids", "son", "daughter", "孩子", "儿子", "女儿",
        ],
    ),
    (
        "sibling",
        false,
        &[
            "sibling", "siblings", "sister", "brother", "姐姐", "妹妹", "哥哥", "弟弟",
        ],
    ),
    ("friend", false, &["friend", "friends", "朋友"]),
    (
        "language",
        false,
        &["language", "languages", "speaks", "语言"],
    ),
    (
        "allergy",
        false,
        &["allergy", "allergies", "allergic", "过敏"],
    ),
];

/// Last words of an attribute that holds one value (`gym locker number`).
const SINGLE_HEADS: &[&str] = &[
    "number",
    "code",
    "id",
    "address",
    "date",
    "time",
    "spot",
    "room",
    "city",
    "country",
    "age",
    "size",
    "price",
    "salary",
    "rank",
    "score",
    "status",
    "title",
    "level",
    "name",
    "pin",
    "password",
    "color",
    "colour",
    "airline",
    "bank",
    "school",
    "university",
    "team",
    "car",
    "model",
    "brand",
    "day",
    "颜色",
    "号码",
    "密码",
    "地址",
];
/// Last words of an attribute that holds many values.
const MULTI_HEADS: &[&str] = &[
    "hobby",
    "hobbies",
    "pet",
    "pets",
    "friend",
    "friends",
    "interest",
    "interests",
    "skill",
    "skills",
    "book",
    "books",
    "movie",
    "movies",
    "song",
    "songs",
    "trip",
    "trips",
    "plan",
    "plans",
    "goal",
    "goals",
    "activity",
    "activities",
    "event",
    "events",
    "habit",
    "habits",
    "child",
    "children",
    "kid",
    "kids",
    "sibling",
    "siblings",
    "allergy",
    "allergies",
    "experience",
    "experiences",
    "achievement",
    "project",
    "projects",
];

fn stems(text: &str) -> Vec<String> {
    words(text).iter().map(|w| stem(w)).collect()
}

fn contains_seq(hay: &[String], needle: &[String]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Which attribute `attribute` names, normalised (see [`ATTRIBUTES`]),
/// and whether it holds one value (`None`: unknown).
pub fn attribute_key(attribute: &str) -> (String, Option<bool>) {
    let a = one_line(attribute).to_lowercase();
    let s = stems(&a);
    // "favourite tea", "favorite colour", "最喜欢的颜色": one value each.
    let fav = ["favourite", "favorite", "fav", "favorit", "favourit"];
    if let Some(i) = s.iter().position(|w| fav.contains(&w.as_str())) {
        let rest: Vec<String> = s[i + 1..]
            .iter()
            .filter(|w| !STOPWORDS.contains(&w.as_str()))
            .cloned()
            .collect();
        return (
            format!("favourite {}", rest.join(" ")).trim().to_string(),
            Some(true),
        );
    }
    for prefix in ["最喜欢的", "最喜欢", "最爱的", "最爱", "喜欢的"] {
        if let Some(rest) = a.trim().strip_prefix(prefix) {
            return (format!("favourite {}", words(rest).concat()), Some(true));
        }
    }
    // "dentist's name", "dog's name": the attribute of someone or
    // something else, not the user's name; read as the words it is.
    let possessive = a
        .replace('’', "'")
        .split_once("'s ")
        .is_some_and(|(owner, _)| !matches!(owner.trim(), "user" | "the user" | "my"));
    let mut best: Option<(usize, &str, bool)> = None;
    for (key, single, names) in ATTRIBUTES.iter().filter(|_| !possessive) {
        for n in *names {
            let ns = stems(n);
            let hit = if n.chars().any(is_cjk) {
                a.contains(n)
            } else {
                contains_seq(&s, &ns)
            };
            if hit && best.is_none_or(|(len, _, _)| ns.len() > len) {
                best = Some((ns.len(), key, *single));
            }
        }
    }
    if let Some((_, key, single)) = best {
        // "sister's city" is the sister's, not the user's home city, but
        // the subject carries that; "dog's name" is a name.
        let head = s.last().map(String::as_str).unwrap_or_default();
        if !(SINGLE_HEADS.contains(&head) && key != "home city" && stem(key) != head) {
            return (key.to_string(), Some(single));
        }
    }
    let key: Vec<String> = s
        .iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .cloned()
        .collect();
    let head = words(&a).last().cloned().unwrap_or_default();
    let single = if SINGLE_HEADS
        .iter()
        .any(|h| head == *h || stem(h) == stem(&head))
    {
        Some(true)
    } else if MULTI_HEADS.contains(&head.as_str()) {
        Some(false)
    } else {
        None
    };
    (key.join(" "), single)
}

/// True when two attribute keys are alike without being the same: one's
/// words hold the other's, or they share half their words.
fn similar_attribute(a: &str, b: &str) -> bool {
    if a.is_empty() || b.is_empty() || a == b {
        return false;
    }
    let wa: HashSet<&str> = a.split(' ').collect();
    let wb: HashSet<&str> = b.split(' ').collect();
    let shared = wa.intersection(&wb).count();
    shared > 0 && (shared == wa.len().min(wb.len()) || shared * 2 >= wa.union(&wb).count())
}

/// A fact's subject key, attribute key and whether the attribute holds
/// one value.
pub type Keys = (String, String, Option<bool>);

/// The keys of a saved fact: its `about` when the write path stored one,
/// else read from its text (a person's line, a fact from before keys):
/// the user when it speaks of them (or in the first person), the
/// attribute of a known name its words contain.
pub fn fact_keys(f: &Fact, user_names: &[String]) -> Keys {
    if let Some(subject) = &f.subject {
        let (a, single) = attribute_key(f.attribute.as_deref().unwrap_or_default());
        return (subject_key(subject, user_names), a, single);
    }
    let w = words(&f.text);
    let subject = if first_person(&f.text)
        || matches!(w.first().map(String::as_str), Some("user" | "用"))
        || (w.first().map(String::as_str) == Some("the")
            && w.get(1).map(String::as_str) == Some("user"))
        || user_names
            .iter()
            .any(|n| w.first() == Some(&n.to_lowercase()))
    {
        "user".to_string()
    } else if let Some(k) = crate::dream::subject(&f.text) {
        // "Ana's city is Madrid": Ana.
        subject_key(k.split(" s ").next().unwrap_or(&k), user_names)
    } else {
        String::new()
    };
    let (attr, single) = match crate::dream::subject(&f.text) {
        Some(k) => {
            let k = k
                .strip_prefix("the user s ")
                .or_else(|| k.strip_prefix("user s "))
                .unwrap_or(&k)
                .to_string();
            attribute_key(&k)
        }
        None => inferred_attribute(&f.text),
    };
    (subject, attr, single)
}

/// The known attribute a sentence speaks of ("I live in Lisbon": home
/// city), or none.
fn inferred_attribute(text: &str) -> (String, Option<bool>) {
    let s = stems(text);
    let lower = text.to_lowercase();
    for (key, single, names) in ATTRIBUTES {
        for n in *names {
            let hit = if n.chars().any(is_cjk) {
                lower.contains(n)
            } else {
                n.split(' ').count() > 0 && contains_seq(&s, &stems(n))
            };
            if hit && !matches!(*n, "home" | "work" | "name" | "called" | "title" | "cell") {
                return (key.to_string(), Some(*single));
            }
        }
    }
    (String::new(), None)
}

// ---------------------------------------------------------------- check

/// The day of a message: its timestamp's, else `fallback`.
pub fn message_day(m: &Message, fallback: NaiveDate) -> NaiveDate {
    m.timestamp
        .as_deref()
        .and_then(|t| {
            DateTime::parse_from_rfc3339(t)
                .map(|d| d.date_naive())
                .ok()
                .or_else(|| t.get(..10).and_then(|d| d.parse().ok()))
        })
        .unwrap_or(fallback)
}

/// The names a round's user messages go by (`Caroline: ...` in a
/// transcript of two people).
pub fn user_names(messages: &[Message]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in messages.iter().filter(|m| m.role == Role::User) {
        let t = m.text();
        if let Some((name, _)) = t.split_once(": ") {
            let name = name.trim();
            if (1..=3).contains(&name.split_whitespace().count())
                && name.chars().next().is_some_and(char::is_uppercase)
                && !out.iter().any(|n| n == name)
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The message that holds `quote` best: the whole quote inside it (its
/// words in order), else the most of its words (at least four in five);
/// the later message on a tie. Returns its index and the share found.
fn locate(quote: &str, texts: &[(usize, String, HashSet<String>)]) -> Option<(usize, f32)> {
    let q = words(quote);
    if q.is_empty() {
        return None;
    }
    let qf = flat(quote);
    let mut best: Option<(usize, f32)> = None;
    for (i, text, set) in texts {
        let score = if flat(text).contains(&qf)
            || (quote.chars().any(is_cjk) && flat(text).contains(qf.trim()))
        {
            1.0
        } else {
            q.iter().filter(|w| set.contains(*w)).count() as f32 / q.len() as f32
        };
        if best.is_none_or(|(_, s)| score >= s) && score > 0.0 {
            best = Some((*i, score));
        }
    }
    best.filter(|(_, s)| *s >= 0.8)
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// A sentence made from the checked parts, for a model's sentence that
/// could not be stored as it was.
fn compose(
    subject: &str,
    subject_key: &str,
    attribute: &str,
    value: &str,
    kind: Kind,
    cjk: bool,
) -> Option<String> {
    let attribute = attribute.trim();
    if cjk {
        let who = if subject_key == "user" {
            "用户"
        } else {
            subject.trim()
        };
        return match kind {
            Kind::Retracts => Some(format!("{who}要求忘记其{attribute}。")),
            _ if value.trim().is_empty() || attribute.is_empty() => None,
            _ if attribute.starts_with('最') || attribute.starts_with('的') => {
                Some(format!("{who}{attribute}是{}。", value.trim()))
            }
            _ => Some(format!("{who}的{attribute}是{}。", value.trim())),
        };
    }
    let who = if subject_key == "user" {
        "The user".to_string()
    } else {
        capitalised(subject.trim())
    };
    let whose = if who.ends_with('s') {
        format!("{who}'")
    } else {
        format!("{who}'s")
    };
    match kind {
        Kind::Retracts if !attribute.is_empty() => {
            Some(format!("{who} asked to forget their {attribute}."))
        }
        Kind::Retracts => None,
        _ if value.trim().is_empty() || attribute.is_empty() => None,
        _ => Some(format!(
            "{whose} {attribute} is {}.",
            value.trim().trim_end_matches('.')
        )),
    }
}

/// Checks the model's proposals against the round's `messages` (see the
/// module docs). `today` dates messages without a timestamp.
pub fn check(
    proposed: &[Proposed],
    messages: &[Message],
    today: NaiveDate,
) -> (Vec<Checked>, Vec<Refusal>) {
    let names = user_names(messages);
    let texts: Vec<(usize, String, HashSet<String>)> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m.role, Role::User | Role::Assistant))
        .map(|(i, m)| {
            let t = m.text();
            let set = words(&t).into_iter().collect();
            (i, t, set)
        })
        .filter(|(_, t, _)| !t.trim().is_empty())
        .collect();
    let mut out: Vec<Checked> = Vec::new();
    let mut refused = Vec::new();
    for p in proposed {
        let label = if p.fact.is_empty() {
            p.value.clone()
        } else {
            p.fact.clone()
        };
        let refuse = |why: &str, message: Option<usize>| Refusal {
            fact: label.clone(),
            why: why.to_string(),
            message,
            quote: p.quote.clone(),
        };
        match check_one(p, messages, &texts, &names, today) {
            Ok(c) => {
                let dup = out.iter().any(|o| {
                    o.subject_key == c.subject_key
                        && o.attribute_key == c.attribute_key
                        && o.kind == c.kind
                        && content(&o.value) == content(&c.value)
                });
                if !dup {
                    out.push(c);
                }
            }
            Err((why, message)) => refused.push(refuse(&why, message)),
        }
    }
    (out, refused)
}

fn check_one(
    p: &Proposed,
    messages: &[Message],
    texts: &[(usize, String, HashSet<String>)],
    names: &[String],
    today: NaiveDate,
) -> std::result::Result<Checked, (String, Option<usize>)> {
    let fact = crate::guard::strip_fact_meta(&p.fact);
    if fact.trim_end().ends_with('?') || fact.trim_end().ends_with('？') {
        return Err(("a question states nothing".into(), None));
    }
    // Where it comes from: the quote, else the message that says most of
    // the fact's words.
    let by_quote = locate(&p.quote, texts);
    let located = by_quote.or_else(|| {
        let needed = content(&format!("{} {}", p.value, fact));
        texts
            .iter()
            .map(|(i, t, _)| {
                let have: HashSet<String> = content(t).into_iter().collect();
                (*i, support(&needed, &have))
            })
            .filter(|(_, s)| *s >= 0.75)
            .max_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
    });
    let Some((at, _)) = located else {
        return Err((
            if p.quote.trim().is_empty() {
                "no message says it".into()
            } else {
                format!("the quoted words {:?} are in no message", p.quote)
            },
            None,
        ));
    };
    let msg = &messages[at];
    let said_text = msg.text();
    let quote = match by_quote {
        Some(_) => p.quote.clone(),
        None => said_text.clone(),
    };
    let quote_flat = flat(&quote);
    let clause_flat = flat(&clause_of(&quote, &p.value));
    // Small talk, questions and the assistant's own chatter: a value that
    // is a greeting or thanks, a quote that asks, or labelled one.
    let attribute_words: HashSet<String> = words(&p.attribute).into_iter().collect();
    let said = if p.value.trim().is_empty() {
        &fact
    } else {
        &p.value
    };
    if has_phrase(&flat(said), SMALL_TALK)
        || ["greeting", "greetings", "thanks", "farewell", "small"]
            .iter()
            .any(|w| attribute_words.contains(*w))
    {
        return Err(("small talk".into(), Some(at)));
    }
    if (by_quote.is_some() && quote.trim_end().ends_with(['?', '？']))
        || ["question", "questions", "request", "asked"]
            .iter()
            .any(|w| attribute_words.contains(*w))
    {
        return Err(("a question states nothing".into(), Some(at)));
    }
    let subject_raw = p.subject.trim();
    if ASSISTANT_SUBJECTS.contains(&subject_raw.to_lowercase().as_str())
        || fact.to_lowercase().starts_with("the assistant")
    {
        return Err(("about the assistant, not the user".into(), Some(at)));
    }
    if has_phrase(&flat(&fact), TRANSIENT) || has_phrase(&flat(&p.value), TRANSIENT) {
        return Err(("true only for the moment".into(), Some(at)));
    }
    let mut subject_raw = subject_raw.to_string();
    let mut subject_key = subject_key(&subject_raw, names);
    // "My sister Ana lives in Madrid" is the sister's, whatever the model
    // named: unless the attribute is the relation itself ("my sister is
    // Ana").
    if subject_key == "user" {
        if let Some(rel) =
            relation_subject(&fact).or_else(|| relation_subject(&clause_of(&quote, &p.value)))
        {
            let attr_words: HashSet<String> = words(&p.attribute).into_iter().collect();
            // Past "the user's" (or 用户的): the relation and the name.
            let about_relation = words(&rel).iter().skip(3).any(|w| attr_words.contains(w));
            if !about_relation {
                subject_key = self::subject_key(&rel, names);
                subject_raw = rel;
            }
        }
    }
    let subject_raw = subject_raw.as_str();
    // The assistant's words count for the user only when the user's next
    // message confirms them.
    let mut evidence = said_text.clone();
    if msg.role == Role::Assistant && subject_key == "user" {
        let next = messages
            .iter()
            .skip(at + 1)
            .find(|m| matches!(m.role, Role::User | Role::Assistant));
        let confirmed = next.is_some_and(|n| {
            n.role == Role::User && {
                let t = n.text();
                words(&t).len() <= 12 && has_phrase(&flat(&t), CONFIRMATIONS)
            }
        });
        if !confirmed {
            return Err((
                "the assistant said it and the user did not confirm it".into(),
                Some(at),
            ));
        }
        if let Some(n) = next {
            evidence.push('\n');
            evidence.push_str(&n.text());
        }
    } else if msg.role == Role::User {
        // "Yes, do that" confirms what the assistant proposed just before.
        if let Some(prev) = messages[..at]
            .iter()
            .rev()
            .find(|m| matches!(m.role, Role::User | Role::Assistant))
        {
            if prev.role == Role::Assistant
                && words(&said_text).len() <= 12
                && has_phrase(&flat(&said_text), CONFIRMATIONS)
            {
                evidence.push('\n');
                evidence.push_str(&prev.text());
            }
        }
    }
    let mut have: HashSet<String> = content(&evidence).into_iter().collect();
    have.extend(content(subject_raw));
    for n in names {
        have.extend(content(n));
    }
    // The kind, by the quote's own words first.
    let model_kind = match p.kind.as_str() {
        "changes" => Kind::Changes,
        "corrects" => Kind::Corrects,
        "retracts" => Kind::Retracts,
        _ => Kind::States,
    };
    let negated_quote = has_phrase(&clause_flat, NEGATIONS);
    let negated_fact = has_phrase(&flat(&fact), NEGATIONS);
    let mut kind = if has_phrase(&clause_flat, RETRACT_CUES) || model_kind == Kind::Retracts {
        Kind::Retracts
    } else if has_phrase(&quote_flat, CORRECT_CUES) {
        Kind::Corrects
    } else if has_phrase(&quote_flat, CHANGE_CUES) || model_kind == Kind::Changes {
        if model_kind == Kind::Corrects {
            Kind::Corrects
        } else {
            Kind::Changes
        }
    } else {
        model_kind
    };
    // "I no longer eat meat" read as "The user eats meat": the quote ends
    // what the fact would say, so it is a retraction of it.
    if negated_quote && !negated_fact && kind != Kind::Retracts && !p.value.is_empty() {
        let v = content(&p.value);
        let q: HashSet<String> = content(&quote).into_iter().collect();
        if !v.is_empty()
            && v.iter().all(|w| q.contains(w))
            && has_phrase(
                &quote_flat,
                &["no longer", "anymore", "any more", "not anymore", "不再"],
            )
        {
            kind = Kind::Retracts;
        }
    }
    // The value must be in the evidence: a value the messages do not say
    // is made up.
    let value = one_line(&p.value);
    let value_words = content(&value);
    if kind != Kind::Retracts {
        if value_words.is_empty() && fact.trim().is_empty() {
            return Err(("no value".into(), Some(at)));
        }
        let hard = hard_words(&value);
        if hard.iter().any(|w| !have.contains(w)) || support(&value_words, &have) < 0.6 {
            return Err((
                format!("the value {value:?} is not in the message"),
                Some(at),
            ));
        }
    }
    let said = message_day(msg, today);
    let cjk = said_text.chars().any(is_cjk);
    let attribute = one_line(&p.attribute);
    // The sentence: kept when the message supports it, else made from the
    // checked parts.
    let attr_words: HashSet<String> = content(&attribute).into_iter().collect();
    let sentence_ok = !fact.trim().is_empty()
        && !first_person(&fact)
        && flat(&fact) != flat(&said_text)
        && hard_words(&fact).iter().all(|w| have.contains(w))
        && {
            let needed: Vec<String> = content(&fact)
                .into_iter()
                .filter(|w| !attr_words.contains(w))
                .collect();
            support(&needed, &have) >= 0.5
        };
    let (mut text, rewritten) = if sentence_ok {
        let t = fact.trim();
        // "The user最喜欢的颜色是蓝色": one language in a sentence.
        let t = if t.chars().any(is_cjk) {
            t.strip_prefix("The user's ")
                .or_else(|| t.strip_prefix("The user"))
                .map_or_else(
                    || t.to_string(),
                    |rest| format!("用户{}", rest.trim_start()),
                )
        } else {
            t.to_string()
        };
        (t, false)
    } else {
        match compose(subject_raw, &subject_key, &attribute, &value, kind, cjk) {
            Some(t) => (t, true),
            None => {
                return Err((
                    if first_person(&fact) {
                        "written in the first person, and without an attribute and value to write it again".into()
                    } else {
                        "the message does not say what the sentence says".into()
                    },
                    Some(at),
                ))
            }
        }
    };
    text = crate::dates::absolutize(&text, said);
    let since = match kind {
        Kind::Retracts => said,
        _ => crate::dates::event_day(&quote, said).unwrap_or(said),
    };
    let (attribute_key, single) = if attribute.is_empty() {
        inferred_attribute(&text)
    } else {
        attribute_key(&attribute)
    };
    Ok(Checked {
        text,
        subject: if subject_raw.is_empty() {
            "user".into()
        } else {
            subject_raw.to_string()
        },
        subject_key,
        attribute,
        attribute_key,
        single,
        value,
        kind,
        message: at,
        evidence: quote,
        since,
        said,
        rewritten,
    })
}

// ---------------------------------------------------------------- decide

/// What to do with one checked fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Decision {
    /// A new current fact.
    Add {
        /// Why it ends nothing.
        why: String,
    },
    /// A new current fact that ends these (same subject and attribute).
    Supersede {
        /// The facts it replaces.
        ends: Vec<String>,
        /// Why.
        why: String,
    },
    /// Ends these facts (no new fact).
    Retract {
        /// The facts ended.
        ends: Vec<String>,
        /// Why.
        why: String,
    },
    /// A current fact says it already: it gains this source.
    Confirm {
        /// That fact.
        id: String,
    },
    /// A retraction that names no current fact.
    Unmatched,
}

/// A question the decisions needed and could not answer by rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pair {
    /// Which question.
    pub question: QuestionKind,
    /// The saved fact's text.
    pub old: String,
    /// The new fact (or the words of the retraction).
    pub new: String,
}

/// [`Question`], hashable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuestionKind {
    /// See [`Question::Replaces`].
    Replaces,
    /// See [`Question::Retracts`].
    Retracts,
}

impl From<QuestionKind> for Question {
    fn from(q: QuestionKind) -> Question {
        match q {
            QuestionKind::Replaces => Question::Replaces,
            QuestionKind::Retracts => Question::Retracts,
        }
    }
}

/// The model's answers so far, and the questions still open.
#[derive(Debug, Default, Clone)]
pub struct Answers {
    /// Answered pairs.
    pub known: HashMap<Pair, bool>,
    /// Pairs asked for in the last pass and not answered yet.
    pub open: Vec<Pair>,
    /// Questions asked in all.
    pub asked: usize,
}

impl Answers {
    fn ask(&mut self, pair: Pair) -> Option<bool> {
        if let Some(a) = self.known.get(&pair) {
            return Some(*a);
        }
        if self.asked + self.open.len() < MAX_QUESTIONS && !self.open.contains(&pair) {
            self.open.push(pair);
        }
        None
    }
}

fn value_held(value: &str, text: &str) -> bool {
    let v = content(value);
    if v.is_empty() {
        return false;
    }
    let t: HashSet<String> = content(text).into_iter().collect();
    v.iter().all(|w| t.contains(w))
}

/// Decides what each checked fact does to `file` and applies it there
/// (so a later fact of the round sees an earlier one), with the model's
/// `answers` for the pairs the rules cannot decide (unknown pairs are
/// recorded in `answers.open` and decided as "no" this pass). Returns one
/// decision per fact and the ids the new facts got (`None` for a fact
/// that adds nothing).
#[allow(clippy::too_many_lines)]
pub fn decide(
    file: &mut FactsFile,
    facts: &[Checked],
    names: &[String],
    now: chrono::DateTime<chrono::Utc>,
    sources: &[Option<String>],
    answers: &mut Answers,
) -> mnemo_store::Result<Vec<(Decision, Option<String>)>> {
    answers.open.clear();
    let mut out = Vec::new();
    for (n, c) in facts.iter().enumerate() {
        let source = sources.get(n).and_then(|s| s.as_deref());
        let current: Vec<(Fact, Keys)> = file
            .current()
            .map(|f| (f.clone(), fact_keys(f, names)))
            .collect();
        let same: Vec<&(Fact, Keys)> = current
            .iter()
            .filter(|(_, (s, _, _))| same_subject(s, &c.subject_key))
            .collect();
        // Said already: the fact gains a source.
        if c.kind != Kind::Retracts {
            let dup = current.iter().find(|(f, (s, a, _))| {
                crate::dream::near_duplicate(&f.text, &c.text)
                    || (same_subject(s, &c.subject_key)
                        && (*a == c.attribute_key || a.is_empty())
                        && !c.attribute_key.is_empty()
                        && value_held(&c.value, &f.text))
            });
            if let Some((f, _)) = dup {
                if let Some(src) = source {
                    file.add_source(&f.id, src)?;
                }
                out.push((Decision::Confirm { id: f.id.clone() }, None));
                continue;
            }
        }
        let exact: Vec<&Fact> = same
            .iter()
            .filter(|(_, (_, a, _))| !a.is_empty() && *a == c.attribute_key)
            .map(|(f, _)| f)
            .filter(|f| f.since.is_none_or(|s| s <= c.since.max(c.said)))
            .collect();
        let alike: Vec<&Fact> = same
            .iter()
            .filter(|(f, (_, a, _))| {
                *a != c.attribute_key
                    && (similar_attribute(a, &c.attribute_key)
                        || (a.is_empty() && !c.attribute_key.is_empty() && {
                            let (inf, _) = inferred_attribute(&f.text);
                            inf == c.attribute_key
                        })
                        || (c.kind == Kind::Retracts && value_held(&c.value, &f.text)))
            })
            .map(|(f, _)| f)
            .filter(|f| f.since.is_none_or(|s| s <= c.since.max(c.said)))
            .take(MAX_PAIRS)
            .collect();
        let mut ask = |q: QuestionKind, old: &Fact, new: &str| {
            answers.ask(Pair {
                question: q,
                old: old.text.clone(),
                new: new.to_string(),
            })
        };
        if c.kind == Kind::Retracts {
            let named: Vec<&Fact> = exact
                .iter()
                .copied()
                .filter(|f| c.value.trim().is_empty() || value_held(&c.value, &f.text))
                .collect();
            let (ends, why) = if !named.is_empty() {
                (
                    named.iter().map(|f| f.id.clone()).collect::<Vec<_>>(),
                    "same subject and attribute".to_string(),
                )
            } else {
                let unsure: Vec<&Fact> = exact
                    .iter()
                    .chain(alike.iter())
                    .copied()
                    .take(MAX_PAIRS)
                    .collect();
                let yes: Vec<String> = unsure
                    .iter()
                    .filter(|f| ask(QuestionKind::Retracts, f, &c.evidence) == Some(true))
                    .map(|f| f.id.clone())
                    .collect();
                (yes, "the model answered yes".to_string())
            };
            if ends.is_empty() {
                out.push((Decision::Unmatched, None));
                continue;
            }
            for id in &ends {
                match source {
                    Some(src) => file.retract(id, Some(c.said), src)?,
                    None => file.end(id, Some(c.said), None)?,
                };
            }
            out.push((Decision::Retract { ends, why }, None));
            continue;
        }
        let differs: Vec<&Fact> = exact
            .iter()
            .copied()
            .filter(|f| !value_held(&c.value, &f.text))
            .collect();
        let (ends, why): (Vec<String>, String) = if !differs.is_empty() {
            match (c.kind, c.single) {
                (Kind::Changes | Kind::Corrects, Some(false)) | (Kind::States, None) => (
                    differs
                        .iter()
                        .take(MAX_PAIRS)
                        .filter(|f| ask(QuestionKind::Replaces, f, &c.text) == Some(true))
                        .map(|f| f.id.clone())
                        .collect(),
                    "same subject and attribute; the model answered yes".into(),
                ),
                (Kind::States, Some(false)) => (Vec::new(), String::new()),
                _ => (
                    differs.iter().map(|f| f.id.clone()).collect(),
                    "same subject and attribute, another value".into(),
                ),
            }
        } else if matches!(c.kind, Kind::Changes | Kind::Corrects) && !alike.is_empty() {
            (
                alike
                    .iter()
                    .filter(|f| !value_held(&c.value, &f.text))
                    .filter(|f| ask(QuestionKind::Replaces, f, &c.text) == Some(true))
                    .map(|f| f.id.clone())
                    .collect(),
                "a like attribute; the model answered yes".into(),
            )
        } else {
            (Vec::new(), String::new())
        };
        let since = match c.kind {
            // A correction says what was true all along.
            Kind::Corrects => ends
                .iter()
                .filter_map(|id| file.get(id).and_then(|f| f.since))
                .min()
                .unwrap_or(c.since),
            _ => c.since,
        };
        let id = file.add_fact(
            Fact::new(
                String::new(),
                &c.text,
                Some(since),
                now,
                source.map(str::to_string),
            )
            .about(&c.subject, &c.attribute),
        );
        if ends.is_empty() {
            out.push((
                Decision::Add {
                    why: if c.single == Some(false) && !differs.is_empty() {
                        "the attribute holds many values".into()
                    } else {
                        "no current fact of the same subject and attribute".into()
                    },
                },
                Some(id),
            ));
        } else {
            // A change ends the old value on the day it happened; a
            // correction on the day it was said.
            let until = match c.kind {
                Kind::Corrects => c.said,
                _ => c.since,
            };
            for old in &ends {
                file.end(old, Some(until), Some(&id))?;
            }
            out.push((Decision::Supersede { ends, why }, Some(id)));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "adjudicate_tests.rs"]
mod tests;
