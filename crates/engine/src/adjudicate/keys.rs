//! Who a fact is about and which of their attributes: the subject and
//! attribute keys supersession compares, from the write path's `about`
//! metadata or read from a fact's text.

use std::collections::HashSet;

use mnemo_store::memory::facts::{one_line, Fact};

use super::words::{first_person, is_cjk, stem, words, STOPWORDS, USER_WORDS};

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

/// Words that say how someone relates to the user rather than who they
/// are: two people the user calls "cousin" are not one person.
const RELATIONS: &[&str] = &[
    "user",
    "s",
    "sister",
    "brother",
    "sibling",
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "parent",
    "parents",
    "wife",
    "husband",
    "partner",
    "girlfriend",
    "boyfriend",
    "son",
    "daughter",
    "child",
    "kid",
    "cousin",
    "aunt",
    "uncle",
    "niece",
    "nephew",
    "grandmother",
    "grandma",
    "grandfather",
    "grandpa",
    "friend",
    "best",
    "colleague",
    "coworker",
    "boss",
    "manager",
    "neighbour",
    "neighbor",
    "roommate",
    "flatmate",
    "teacher",
    "doctor",
    "old",
    "new",
    "older",
    "younger",
    "little",
    "big",
];

/// True when two subject keys name the same one: equal, or (neither the
/// user) sharing a name, or, where one of them has no name ("sister"),
/// sharing a word.
pub fn same_subject(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if a == "user" || b == "user" {
        return false;
    }
    let names = |k: &str| -> HashSet<String> {
        k.split(' ')
            .filter(|w| !w.is_empty() && !RELATIONS.contains(w))
            .map(str::to_string)
            .collect()
    };
    let (na, nb) = (names(a), names(b));
    if !na.is_empty() && !nb.is_empty() {
        return na.intersection(&nb).next().is_some();
    }
    let wa: HashSet<&str> = a.split(' ').filter(|w| *w != "user").collect();
    b.split(' ').any(|w| w != "user" && wa.contains(w))
}

/// Common attributes: the key, whether it holds one value, and the words
/// that name it (any one, stemmed, matched as whole words of the
/// attribute). Measured on the dev sets' statements: these are the
/// attributes people change most (where they live, work, eat, who with).
pub(super) const ATTRIBUTES: &[(&str, bool, &[&str])] = &[
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
pub(super) const SINGLE_HEADS: &[&str] = &[
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
pub(super) const MULTI_HEADS: &[&str] = &[
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
    // What a model names a passing remark by: many of them, none ends another.
    "action",
    "actions",
    "decision",
    "decisions",
    "response",
    "feeling",
    "feelings",
    "emotion",
    "emotions",
    "opinion",
    "opinions",
    "thought",
    "thoughts",
    "idea",
    "ideas",
    "recommendation",
    "recommendations",
    "suggestion",
    "suggestions",
    "topic",
    "topics",
    "dish",
    "dishes",
    "recipe",
    "recipes",
    "memory",
    "memories",
    "story",
    "stories",
    "visit",
    "visits",
];

pub(super) fn stems(text: &str) -> Vec<String> {
    words(text).iter().map(|w| stem(w)).collect()
}

pub(super) fn contains_seq(hay: &[String], needle: &[String]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Generic attributes someone else's words can qualify: the key, the head
/// words that name it (any, when empty) and the words that keep it the
/// user's own. Another word makes it something else's: "dentist name" is
/// not the user's name, "wedding location" not their home.
const QUALIFIED: &[(&str, &[&str], &[&str])] = &[
    (
        "name",
        &[],
        &[
            "name", "first", "full", "last", "given", "nick", "real", "user",
        ],
    ),
    (
        "home city",
        &["location", "city", "place", "venue"],
        &[
            "home",
            "current",
            "new",
            "user",
            "live",
            "residence",
            "hometown",
            "now",
            "present",
        ],
    ),
];

/// Chinese nouns of favourites, in English (one key in either language).
const CJK_NOUNS: &[(&str, &str)] = &[
    ("颜色", "colour"),
    ("食物", "food"),
    ("电影", "movie"),
    ("书", "book"),
    ("歌", "song"),
    ("歌曲", "song"),
    ("运动", "sport"),
    ("动物", "animal"),
    ("饮料", "drink"),
    ("茶", "tea"),
    ("水果", "fruit"),
    ("城市", "city"),
    ("花", "flower"),
    ("菜", "dish"),
];

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
            .map(|w| {
                if w == "color" {
                    "colour".to_string()
                } else {
                    w.clone()
                }
            })
            .collect();
        return (
            format!("favourite {}", rest.join(" ")).trim().to_string(),
            Some(true),
        );
    }
    for prefix in ["最喜欢的", "最喜欢", "最爱的", "最爱", "喜欢的"] {
        if let Some(rest) = a.trim().strip_prefix(prefix) {
            let rest = rest.trim();
            // One key in either language: 最喜欢的颜色 = favourite colour.
            let english = CJK_NOUNS
                .iter()
                .find(|(zh, _)| *zh == rest)
                .map(|(_, en)| stem(en));
            let noun = english.unwrap_or_else(|| words(rest).concat());
            return (format!("favourite {noun}"), Some(true));
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
        let other_head = SINGLE_HEADS.contains(&head) && key != "home city" && stem(key) != head;
        let qualified = QUALIFIED.iter().any(|(k, heads, own)| {
            *k == key
                && (heads.is_empty() || heads.iter().any(|h| stem(h) == head))
                && s.iter().any(|w| {
                    !STOPWORDS.contains(&w.as_str())
                        && !heads.iter().chain(own.iter()).any(|o| stem(o) == *w)
                })
        });
        if !(other_head || qualified) {
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
pub(super) fn similar_attribute(a: &str, b: &str) -> bool {
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
        let (a, single) = keys_of(f.attribute.as_deref().unwrap_or_default(), &f.text);
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

/// The attribute key of a fact said in `text` with the model's
/// `attribute` (inferred from the text when there is none): a place
/// someone went to, or an event's, which a model may call a "location",
/// is no home city.
pub fn keys_of(attribute: &str, text: &str) -> (String, Option<bool>) {
    let keys = if attribute.trim().is_empty() {
        inferred_attribute(text)
    } else {
        attribute_key(attribute)
    };
    if keys.0 == "home city" {
        if super::words::a_visit(text) {
            return ("place visited".to_string(), Some(false));
        }
        // "The user is back to chat", keyed "location": no place named.
        if !names_a_place(text) {
            return ("location".to_string(), None);
        }
        // "The wedding is in Lyon after all", keyed "location".
        if let Some(event) = super::words::placed_event(text) {
            return attribute_key(&format!("{event} location"));
        }
    }
    keys
}

/// True when `text` names a place: a capitalised word past its first
/// (and past "The user"), or Chinese.
fn names_a_place(text: &str) -> bool {
    text.chars().any(is_cjk)
        || text
            .split_whitespace()
            .skip(1)
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .any(|w| {
                w.chars().next().is_some_and(char::is_uppercase)
                    && !matches!(w, "User" | "I" | "I'm" | "I've")
            })
}

/// The known attribute a sentence speaks of ("I live in Lisbon": home
/// city), or none.
pub(super) fn inferred_attribute(text: &str) -> (String, Option<bool>) {
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
