use super::*;

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

fn limits(max: usize, overlap: usize, count: &dyn Fn(&str) -> usize) -> ChunkLimits<'_> {
    ChunkLimits {
        max_tokens: max,
        overlap_tokens: overlap,
        count,
    }
}

#[test]
fn every_chunk_fits_and_lines_are_covered() {
    let text = (1..=200)
        .map(|i| format!("line {i} has five words"))
        .collect::<Vec<_>>()
        .join("\n");
    let chunks = chunk_markdown(&text, &limits(50, 10, &words));
    assert!(chunks.len() > 10);
    for c in &chunks {
        assert!(words(&c.text) <= 50, "{} tokens", words(&c.text));
        assert_eq!(c.text.lines().count(), c.end_line - c.start_line + 1);
    }
    assert_eq!(chunks[0].start_line, 1);
    assert_eq!(chunks.last().unwrap().end_line, 200);
    // Overlap: each chunk starts at or before the line after the previous end.
    for w in chunks.windows(2) {
        assert!(w[1].start_line <= w[0].end_line + 1);
        assert!(w[1].start_line > w[0].start_line);
    }
    assert!(
        chunks.windows(2).any(|w| w[1].start_line <= w[0].end_line),
        "no overlap at all"
    );
}

#[test]
fn cuts_before_headings() {
    let mut lines = vec!["# Title".to_string()];
    lines.extend((0..6).map(|i| format!("alpha text number {i} here")));
    lines.push("## Second".to_string());
    lines.extend((0..6).map(|i| format!("beta text number {i} here")));
    let text = lines.join("\n");
    let chunks = chunk_markdown(&text, &limits(40, 10, &words));
    assert!(
        chunks.iter().any(|c| c.text.starts_with("## Second")),
        "{chunks:#?}"
    );
    assert!(!chunks[0].text.contains("## Second"));
}

#[test]
fn overlong_line_is_split_on_same_line_number() {
    let long = (0..300)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let text = format!("short\n{long}\nend");
    let chunks = chunk_markdown(&text, &limits(64, 8, &words));
    assert!(chunks.iter().all(|c| words(&c.text) <= 64));
    let on_line2: Vec<_> = chunks
        .iter()
        .filter(|c| c.start_line == 2 && c.end_line == 2)
        .collect();
    assert!(on_line2.len() >= 3, "{chunks:#?}");
    let joined: String = chunks
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(joined.contains("w0 ") && joined.contains("w299"));
}

#[test]
fn cjk_line_without_spaces_is_split() {
    let long: String = "我喜欢弹钢琴".repeat(100);
    let chunks = chunk_markdown(&long, &limits(64, 8, &estimate_tokens));
    assert!(chunks.len() >= 9, "{}", chunks.len());
    assert!(chunks.iter().all(|c| estimate_tokens(&c.text) <= 64));
}

#[test]
fn blank_file_gives_no_chunks() {
    assert!(chunk_markdown("\n\n   \n", &limits(64, 8, &words)).is_empty());
}

#[test]
fn transcript_cuts_on_message_boundaries() {
    let msgs: Vec<RenderedMessage> = (0..20)
        .map(|i| RenderedMessage {
            ordinal: i,
            line: i + 2,
            text: format!("User: message {i} with some words"),
            day: None,
        })
        .collect();
    let chunks = chunk_transcript(&msgs, &limits(30, 0, &words));
    for c in &chunks {
        let (a, b) = c.messages.unwrap();
        assert_eq!(c.text.lines().count(), b - a + 1, "{c:?}");
        assert_eq!(c.start_line, a + 2);
        assert_eq!(c.end_line, b + 2);
    }
    let covered: usize = chunks
        .iter()
        .map(|c| c.messages.unwrap().1 - c.messages.unwrap().0 + 1)
        .sum();
    assert_eq!(covered, 20);
}

#[test]
fn markdown_blocks_are_items_paragraphs_and_headed_blocks() {
    let text = "# Lena\n\nLena takes piano lessons.\nOn Tuesdays.\n\n- tea, not coffee\n  (since 2024)\n  - nested\n- 10:32 met Anna\n1. first\n## Code\n```\nlet a = 1;\n\n- not an item\n```\nafter the fence\n";
    let parts = markdown_parts(text, 10);
    let firsts: Vec<usize> = parts.iter().map(|p| p.line).collect();
    // The heading joins its paragraph; items split; "## Code" joins the
    // fence, which stays whole; text after a fence starts a block.
    assert_eq!(firsts, [10, 15, 18, 19, 20, 26], "{parts:?}");
    assert!(parts.iter().all(|p| p.ordinal == p.line));
    let block = |i| MessagePart::text_of(&parts, i, text).trim_end();
    assert_eq!(
        block(0),
        "# Lena\n\nLena takes piano lessons.\nOn Tuesdays."
    );
    assert_eq!(block(1), "- tea, not coffee\n  (since 2024)\n  - nested");
    assert_eq!(block(4), "## Code\n```\nlet a = 1;\n\n- not an item\n```");
    assert_eq!(block(5), "after the fence");
    assert!(markdown_parts("", 1).is_empty());
    // Hashtag lines are text, not headings: one paragraph.
    let tags = markdown_parts("#rust notes\n#sqlite notes\n", 1);
    assert_eq!(tags.len(), 1);
    assert_eq!(markdown_parts("no newline at the end", 3)[0].line, 3);
    // A setext heading joins the block under it, as an ATX one does.
    let setext = "Lena\n====\n\nPiano on Tuesdays.\n\nWork\n----\n\n- ships on Fridays\n";
    let lines: Vec<usize> = markdown_parts(setext, 1).iter().map(|p| p.line).collect();
    assert_eq!(lines, [1, 6], "{setext}");
    // So does front matter at the top of a file: a typed memory is one
    // block; what follows its first block is a block of its own. Lower in
    // a file (or in a later chunk) `---` is a rule.
    let typed = "---\nname: tea\ntype: user\n---\n\nPrefers green tea.\n\n- and oat milk\n";
    let lines: Vec<usize> = markdown_parts(typed, 1).iter().map(|p| p.line).collect();
    assert_eq!(lines, [1, 8], "{typed}");
    let lines: Vec<usize> = markdown_parts(typed, 5).iter().map(|p| p.line).collect();
    assert_eq!(lines, [5, 10, 12], "{typed}");
    // The indexer's front matter rule: `...` closes it too; one never
    // closed makes the file plain text.
    let dots = "---\nname: tea\n...\n\nPrefers green tea.\n\n- and oat milk\n";
    let lines: Vec<usize> = markdown_parts(dots, 1).iter().map(|p| p.line).collect();
    assert_eq!(lines, [1, 7], "{dots}");
    let open = "---\nname: tea\n\nPrefers green tea.\n";
    assert_eq!(front_matter(open), FrontMatter::Unclosed);
    let lines: Vec<usize> = markdown_parts(open, 1).iter().map(|p| p.line).collect();
    assert_eq!(lines, [1, 4], "{open}");
    // A rule after a blank line is a rule, not an underline.
    let rule = "Intro\n\n---\n\nMore text\n";
    let lines: Vec<usize> = markdown_parts(rule, 1).iter().map(|p| p.line).collect();
    assert_eq!(lines, [1, 3, 5], "{rule}");
}

#[test]
fn a_facts_file_is_one_chunk_per_fact() {
    let text = "# Facts\n\nWhat mnemo knows.\n\n- The user lives in Berlin. (f2; about user: home city)\n- Berlin is my home (h1a2b3c)\n  said twice\n\n## No longer true\n\n- ~~Lives in Paris.~~ (f1; until 2026-03-05)\n- ~~Has a dog.~~ (f3; retracted)\n";
    let chunks = chunk_items(text, &limits(50, 10, &words));
    let got: Vec<(usize, usize, &str)> = chunks
        .iter()
        .map(|c| (c.start_line, c.end_line, c.text.as_str()))
        .collect();
    // Each fact alone, with the lines under it; its metadata stays in the
    // chunk (what it is about is searched); a heading opens the block
    // after it, as in block hits.
    assert_eq!(
        got,
        [
            (1, 3, "# Facts\n\nWhat mnemo knows."),
            (
                5,
                5,
                "- The user lives in Berlin. (f2; about user: home city)"
            ),
            (6, 7, "- Berlin is my home (h1a2b3c)\n  said twice"),
            (
                9,
                11,
                "## No longer true\n\n- ~~Lives in Paris.~~ (f1; until 2026-03-05)"
            ),
            (12, 12, "- ~~Has a dog.~~ (f3; retracted)"),
        ]
    );
    // A block over the limit is cut as Markdown, on its own line numbers.
    let long = format!("- first\n- {}\n", vec!["word"; 120].join(" "));
    let chunks = chunk_items(&long, &limits(50, 10, &words));
    assert_eq!(chunks[0].start_line, 1);
    assert!(chunks.len() > 2, "{chunks:#?}");
    assert!(chunks[1..]
        .iter()
        .all(|c| c.start_line == 2 && words(&c.text) <= 50));
    assert!(chunk_items("", &limits(50, 10, &words)).is_empty());
}

#[test]
fn a_question_opens_the_next_chunk_with_its_answer() {
    let text = |i: usize| match i {
        // 9 words: more than the overlap budget of 4.
        1 => "Assistant: and where will the video shoot take place?".to_string(),
        2 => "User: we are shooting it on the beach in Miami.".to_string(),
        _ => format!("User: message {i} says nothing much"),
    };
    let msgs: Vec<RenderedMessage> = (0..8)
        .map(|i| RenderedMessage {
            ordinal: i,
            line: i + 1,
            text: text(i),
            day: None,
        })
        .collect();
    let chunks = chunk_transcript(&msgs, &limits(20, 4, &words));
    let ranges: Vec<_> = chunks.iter().map(|c| c.messages.unwrap()).collect();
    // The question ends the first chunk and opens the second; the answer
    // ending the second is a statement too long to be carried.
    assert_eq!(ranges, [(0, 1), (1, 2), (3, 5), (6, 7)], "{chunks:#?}");
    assert!(chunks[1].text.starts_with("Assistant: and where"));
}

#[test]
fn a_markdown_question_opens_the_next_chunk_too() {
    // 7-8 words a line; the question (10 words) is over the overlap of 4.
    let text = "- Ann: one line of plain talk\n- Bob: and where will the video shoot take place?\n- Ann: we are shooting it in Miami.\n- Bob: another line of plain talk\n- Ann: a last line of plain talk\n";
    let chunks = chunk_markdown(text, &limits(20, 4, &words));
    let ranges: Vec<_> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
    assert_eq!(ranges, [(1, 2), (2, 3), (4, 5)], "{chunks:#?}");
    assert!(chunks[1].text.starts_with("- Bob: and where"));
}

#[test]
fn long_message_split_by_lines_keeps_its_ordinal() {
    let long = (0..40)
        .map(|i| format!("line {i} of a long answer"))
        .collect::<Vec<_>>()
        .join("\n");
    let msgs = vec![
        RenderedMessage {
            ordinal: 0,
            line: 1,
            text: "User: question".into(),
            day: None,
        },
        RenderedMessage {
            ordinal: 1,
            line: 2,
            text: format!("Assistant: {long}"),
            day: None,
        },
    ];
    let chunks = chunk_transcript(&msgs, &limits(40, 0, &words));
    assert_eq!(chunks[0].messages, Some((0, 0)));
    assert!(chunks.len() > 3);
    assert!(chunks[1..]
        .iter()
        .all(|c| c.messages == Some((1, 1)) && c.start_line == 2));
}

#[test]
fn transcript_chunks_know_where_each_message_starts() {
    let msgs = vec![
        RenderedMessage {
            ordinal: 0,
            line: 2,
            text: "Ann: look at this\n[image: a cat]".into(),
            day: None,
        },
        RenderedMessage {
            ordinal: 2,
            line: 5,
            text: "Bob: a cat".into(),
            day: None,
        },
        RenderedMessage {
            ordinal: 3,
            line: 6,
            text: "Ann: mine".into(),
            day: None,
        },
    ];
    let chunks = chunk_transcript(&msgs, &limits(100, 0, &words));
    assert_eq!(chunks.len(), 1);
    let c = &chunks[0];
    assert_eq!(
        c.parts
            .iter()
            .map(|p| (p.ordinal, p.line))
            .collect::<Vec<_>>(),
        vec![(0, 2), (2, 5), (3, 6)]
    );
    let texts: Vec<&str> = (0..3)
        .map(|i| MessagePart::text_of(&c.parts, i, &c.text))
        .collect();
    assert_eq!(
        texts,
        [
            "Ann: look at this\n[image: a cat]",
            "Bob: a cat",
            "Ann: mine"
        ]
    );
    assert_eq!(MessagePart::text_of(&c.parts, 3, &c.text), "");

    // Stored form round-trips; damage gives no parts, never a panic.
    assert_eq!(MessagePart::decode(&MessagePart::encode(&c.parts)), c.parts);
    assert!(MessagePart::decode("1:2").is_empty());
    assert!(MessagePart::decode("1:2:x,3:4:5").is_empty());
    assert!(MessagePart::decode("").is_empty());
    let dated = MessagePart::decode("4:6:0:2026-03-01,5:7:12");
    assert_eq!(dated[0].day, NaiveDate::from_ymd_opt(2026, 3, 1));
    assert_eq!(dated[1].day, None);
    assert_eq!(MessagePart::encode(&dated), "4:6:0:2026-03-01,5:7:12");
    assert!(MessagePart::decode("4:6:0:March").is_empty());
    let far = [MessagePart {
        ordinal: 0,
        line: 1,
        offset: 999,
        day: None,
    }];
    assert_eq!(MessagePart::text_of(&far, 0, "short"), "");

    // Markdown chunks have none; a message split by lines has one per chunk.
    assert!(chunk_markdown("# a\nb\nc", &limits(100, 0, &words))[0]
        .parts
        .is_empty());
    let long = (0..40)
        .map(|i| format!("line {i} of a long answer"))
        .collect::<Vec<_>>()
        .join("\n");
    let split = chunk_transcript(
        &[RenderedMessage {
            ordinal: 7,
            line: 9,
            text: long,
            day: None,
        }],
        &limits(40, 0, &words),
    );
    assert!(split.len() > 1);
    for c in &split {
        assert_eq!(c.parts.len(), 1);
        assert_eq!((c.parts[0].ordinal, c.parts[0].offset), (7, 0));
        assert_eq!(MessagePart::text_of(&c.parts, 0, &c.text), c.text);
    }
}

/// Pseudo-random documents made of awkward pieces (CJK, emoji, fences left
/// open, headings without text, CRLF, questions, over-long lines, no final
/// newline): chunking and block splitting keep their invariants and never
/// panic, whatever a user wrote.
#[test]
fn random_documents_keep_the_chunk_and_block_invariants() {
    let long = "wörds and 字 ".repeat(120) + "\n";
    let pieces: [&str; 22] = [
        "# Title\n",
        "## 标题\n",
        "#\n",
        "- item one\n",
        "  - nested item\n",
        "1. first\n",
        "```\n",
        "~~~rust\n",
        "\n",
        "\n\n\n",
        "plain words here\n",
        "Why did the deploy fail?\n",
        "什么时候开会？\n",
        "emoji 😀 café ñ\n",
        "#hashtag text\n",
        "line with crlf\r\n",
        &long,
        "---\n",
        "| a | b |\n",
        "    indented code\n",
        "\t tab \t\n",
        "no newline at the end",
    ];
    let mut rng = mnemo_test_support::XorShift::new(0x2545_f491_4f6c_dd1d_u64);
    for _ in 0..1500 {
        let doc: String = (0..rng.below(30)).map(|_| rng.pick(&pieces)).collect();
        let lines: Vec<&str> = doc.lines().collect();
        let chunks = chunk_markdown(&doc, &limits(40, 8, &estimate_tokens));
        let mut covered = vec![false; lines.len()];
        for c in &chunks {
            assert!(
                1 <= c.start_line && c.start_line <= c.end_line && c.end_line <= lines.len(),
                "{c:?} in {doc:?}"
            );
            assert!(estimate_tokens(&c.text) <= 40, "{c:?} in {doc:?}");
            covered[c.start_line - 1..c.end_line]
                .iter_mut()
                .for_each(|x| *x = true);
            let parts = markdown_parts(&c.text, c.start_line);
            for (i, w) in parts.iter().enumerate() {
                assert!(
                    c.text.is_char_boundary(w.offset),
                    "{parts:?} in {c:?} of {doc:?}"
                );
                assert!(
                    (c.start_line..=c.end_line).contains(&w.line),
                    "{parts:?} in {c:?} of {doc:?}"
                );
                assert_eq!(w.ordinal, w.line);
                if let Some(n) = parts.get(i + 1) {
                    assert!(
                        n.offset > w.offset && n.line > w.line,
                        "{parts:?} in {c:?} of {doc:?}"
                    );
                }
                // Every block holds text, and text from its chunk.
                let body = MessagePart::text_of(&parts, i, &c.text);
                assert!(
                    !body.trim().is_empty(),
                    "empty block {i} of {parts:?} in {c:?}"
                );
            }
            assert_eq!(MessagePart::decode(&MessagePart::encode(&parts)), parts);
        }
        for (i, line) in lines.iter().enumerate() {
            assert!(
                covered[i] || line.trim().is_empty(),
                "line {} ({line:?}) is in no chunk of {doc:?}",
                i + 1
            );
        }
    }
}

/// Pseudo-random transcripts (multi-line and blank-lined messages, CJK,
/// questions, messages longer than a chunk): every message is in a chunk,
/// and every message part of a chunk is text of that message.
#[test]
fn random_transcripts_keep_the_message_invariants() {
    let long = "ünïcode and 字 ".repeat(90);
    let texts: [&str; 10] = [
        "User: hello there",
        "Assistant: Why not try the other route?",
        "User: 什么时候开会？",
        "Assistant: first line\n\nsecond line after a blank",
        "User: \n\n",
        &long,
        "Assistant: emoji 😀 and café",
        "User: a\nb\nc\nd\ne",
        "Assistant: ok",
        "User: where is the staging database?",
    ];
    let mut rng = mnemo_test_support::XorShift::new(0x9e37_79b9_7f4a_7c15_u64);
    for _ in 0..800 {
        let mut line = 2;
        let msgs: Vec<RenderedMessage> = (0..rng.below(25))
            .map(|ordinal| {
                let m = RenderedMessage {
                    ordinal,
                    line,
                    text: rng.pick(&texts).to_string(),
                    day: None,
                };
                line += 1 + rng.below(2);
                m
            })
            .collect();
        let chunks = chunk_transcript(&msgs, &limits(48, 8, &estimate_tokens));
        let mut seen = vec![false; msgs.len()];
        for c in &chunks {
            assert!(estimate_tokens(&c.text) <= 48, "{c:?}");
            let (a, b) = c.messages.expect("a transcript chunk names its messages");
            assert!(a <= b && b < msgs.len(), "{c:?}");
            for (i, p) in c.parts.iter().enumerate() {
                let m = &msgs[p.ordinal];
                assert_eq!(p.line, m.line, "{c:?}");
                assert!((a..=b).contains(&p.ordinal), "{c:?}");
                if let Some(n) = c.parts.get(i + 1) {
                    assert!(n.ordinal > p.ordinal && n.offset > p.offset, "{c:?}");
                }
                let body = MessagePart::text_of(&c.parts, i, &c.text);
                assert!(!body.trim().is_empty(), "empty part {i} of {c:?}");
                assert!(
                    m.text.contains(body.trim()),
                    "part {i} ({body:?}) is not text of message {}: {c:?}",
                    p.ordinal
                );
                seen[p.ordinal] = true;
            }
        }
        for (m, seen) in msgs.iter().zip(&seen) {
            assert!(
                *seen || m.text.trim().is_empty() || m.text.trim() == "User:",
                "{m:?} is in no chunk"
            );
        }
    }
}
