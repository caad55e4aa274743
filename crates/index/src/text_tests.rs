use super::*;

#[test]
fn cjk_runs_become_bigrams() {
    assert_eq!(query_tokens("钢琴"), vec!["钢琴"]);
    assert_eq!(query_tokens("学钢琴课"), vec!["学钢", "钢琴", "琴课"]);
    let doc = index_text("我每周六去学钢琴。");
    assert!(doc.split(' ').any(|t| t == "钢琴"), "{doc}");
    assert!(doc.split(' ').any(|t| t == "钢"), "{doc}");
}

#[test]
fn latin_lowercased_and_identifiers_joined() {
    assert_eq!(
        query_tokens("Error ERR-4711!"),
        vec!["error", "err4711", "err", "4711"]
    );
    assert_eq!(index_text("Café-au-lait"), "café au lait");
}

#[test]
fn identifier_detection() {
    assert_eq!(identifiers("what was ERR-4711 about?"), vec!["err-4711"]);
    assert_eq!(identifiers("commit a1b2c3d4 and 2026"), vec!["a1b2c3d4"]);
    assert!(identifiers("what did we eat").is_empty());
}

#[test]
fn snippet_centres_on_best_line() {
    let text = (0..100)
        .map(|i| {
            if i == 70 {
                "the needle is here".to_string()
            } else {
                format!("filler line {i}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let s = snippet(&text, &query_tokens("needle"), 120);
    assert!(s.contains("needle"), "{s}");
    assert!(s.chars().count() <= 120);
}

/// One long line: the snippet is the stretch that holds most of the
/// query's words, not the first place one of them appears.
#[test]
fn a_long_lines_snippet_holds_the_most_query_words() {
    let filler = "We talked about the weather and other small things for a while. ".repeat(8);
    let line = format!(
        "Melanie mentioned a class once. {filler}Then Melanie said her pottery class starts in March at the studio. {filler}"
    );
    let s = snippet(&line, &query_tokens("Melanie pottery class March"), 200);
    assert!(
        s.contains("Melanie said her pottery class starts in March"),
        "{s}"
    );
    assert!(s.chars().count() <= 200);
    // One word: cut around its first place, as before.
    let s = snippet(&line, &query_tokens("mentioned"), 120);
    assert!(s.starts_with("Melanie mentioned"), "{s}");
}

#[test]
fn english_words_are_stemmed_identifiers_are_not() {
    // Inflections meet on one stem, in documents and queries alike.
    assert_eq!(query_tokens("painted"), query_tokens("painting"));
    assert_eq!(query_tokens("Paints"), vec!["paint"]);
    assert_eq!(index_text("adoption agencies"), "adopt agenc");
    // Identifiers, numbers and non-ASCII words are kept as written.
    assert_eq!(
        query_tokens("v2.3.1-rc"),
        vec!["v231rc", "v2", "3", "1", "rc"]
    );
    assert_eq!(query_tokens("running2"), vec!["running2"]);
    assert_eq!(index_text("Straßen"), "straßen");
}

#[test]
fn cjk_share_of_a_query() {
    assert!(mostly_cjk("我喜欢什么运动？"));
    assert!(mostly_cjk("上次说的 deploy 计划"));
    assert!(!mostly_cjk(
        "what did we decide about 部署 and the rollout plan"
    ));
    assert!(!mostly_cjk("deploy key"));
    assert!(!mostly_cjk("ERR-4711"));
}

#[test]
fn queries_leave_out_function_words_unless_nothing_else_is_left() {
    assert!(
        STOPWORDS.windows(2).all(|w| w[0] < w[1]),
        "sorted for binary search"
    );
    assert_eq!(
        query_tokens("What did she say about the trip to Lisbon?"),
        vec!["say", "trip", "lisbon"]
    );
    assert_eq!(query_tokens("who are you?"), vec!["who", "are", "you"]);
    // Parts of identifiers stay, and documents keep every word.
    assert_eq!(query_tokens("a-1"), vec!["a1", "a", "1"]);
    assert!(index_text("the trip").split(' ').any(|t| t == "the"));
}

#[test]
fn chinese_queries_leave_out_pieces_of_two_function_characters() {
    let t = query_tokens("我曾经和你说过什么钢琴课");
    assert!(t.contains(&"钢琴".to_string()), "{t:?}");
    for gone in ["我曾", "曾经", "经和", "和你", "什么"] {
        assert!(!t.contains(&gone.to_string()), "{gone} in {t:?}");
    }
    // Nothing else left: the pieces are searched after all.
    assert_eq!(query_tokens("我们"), vec!["我们"]);
    // Stored text keeps every piece.
    assert!(index_text("我们").split(' ').any(|t| t == "我们"));
}

#[test]
fn phrases_are_adjacent_content_words_of_the_query() {
    // "flavour of ice" and "cream does Nate" are not side by side once the
    // function words are out.
    assert_eq!(
        query_phrases("What flavour of ice cream does Nate make?"),
        vec!["ice cream", "nate make"]
    );
    // Stemmed like the index; nothing for a single word.
    assert_eq!(query_phrases("support groups"), vec!["support group"]);
    assert!(query_phrases("lisbon").is_empty());
}

#[test]
fn a_phrase_is_found_word_for_word() {
    let p = Phrase::of("Secret codename for project 7").unwrap();
    assert!(p.is_in("Note: the SECRET codename for\nproject 7 is BLUEBIRD."));
    assert!(!p.is_in("The secret codename for project 71 is FALCON."));
    assert!(!p.is_in("The secret codename for project 2567 is 7-UP."));
    assert!(!p.is_in("codename for project 7"));
    assert_eq!(Phrase::of("codename"), None);
    assert_eq!(Phrase::of("  ?! "), None);
    let zh = Phrase::of("钢琴课").unwrap();
    assert!(zh.is_in("我每周六去学钢琴课。"));
    assert!(!zh.is_in("我每周六去学钢琴。"));
}
