//! Questions with known answers for `mnemo eval consolidation` on a
//! benchmark file whose questions carry none (MemoryBank: its probing
//! questions have evidence but no reference answer). Statements like the
//! write-path suite's ([`crate::write_path`]) are said by the user in the
//! conversation, in its language, spread over the sessions replayed (a
//! home that changes, the sister's city that changes, a correction
//! corrected, a pet, an airline, a colour that changes, two numbers), and
//! each comes with a question whose answer is the value said last, asked
//! in the words of that statement (the figure measures what a memory
//! keeps, not how well a search matches other words). The values occur
//! nowhere in the benchmark files, so an answer found in a memory was
//! kept from these statements.

use mnemo_core::{Message, Role};
use mnemo_index::is_cjk;

use crate::dataset::{Conversation, Question, SessionData};
use crate::replay::session_messages;
use crate::write_path::spread;

/// One scripted fact: what the user says and where (a fraction of the
/// sessions replayed), the question, and its answer.
#[derive(Debug, Clone, Copy)]
pub struct ScriptedFact {
    /// The user's statements, in order.
    pub stages: &'static [(f64, &'static str)],
    /// The question asked of memory.
    pub question: &'static str,
    /// The value said last.
    pub answer: &'static str,
}

/// The Chinese script.
pub const ZH: &[ScriptedFact] = &[
    ScriptedFact {
        stages: &[(0.1, "我住在塔林。"), (0.6, "我们最近住在根特。")],
        question: "我们最近住在哪个城市？",
        answer: "根特",
    },
    ScriptedFact {
        stages: &[
            (0.2, "我妹妹玛丽索尔住在瓦伦西亚。"),
            (0.7, "玛丽索尔上个月搬到了毕尔巴鄂。"),
        ],
        question: "我妹妹玛丽索尔上个月搬到了哪里？",
        answer: "毕尔巴鄂",
    },
    ScriptedFact {
        stages: &[
            (0.25, "我表姐的婚礼在里昂举行。"),
            (0.55, "不好意思，我说错了：婚礼在南特举行。"),
            (0.85, "等等，婚礼还是在里昂举行。"),
        ],
        question: "我表姐的婚礼在哪里举行？",
        answer: "里昂",
    },
    ScriptedFact {
        stages: &[(0.3, "我养了一只叫佐尔巴的鬣蜥。")],
        question: "我养的鬣蜥叫什么名字？",
        answer: "佐尔巴",
    },
    ScriptedFact {
        stages: &[(0.35, "我常坐的航空公司是汉莎航空。")],
        question: "我常坐哪家航空公司的航班？",
        answer: "汉莎航空",
    },
    ScriptedFact {
        stages: &[
            (0.4, "我最喜欢的颜色是琥珀色。"),
            (0.9, "其实我现在最喜欢靛青色了。"),
        ],
        question: "我现在最喜欢什么颜色？",
        answer: "靛青色",
    },
    ScriptedFact {
        stages: &[(0.45, "我的车位号码是B7。")],
        question: "我的车位号码是多少？",
        answer: "B7",
    },
    ScriptedFact {
        stages: &[(0.5, "我的健身房储物柜号码是K38。")],
        question: "我的健身房储物柜号码是多少？",
        answer: "K38",
    },
];

/// The English script.
pub const EN: &[ScriptedFact] = &[
    ScriptedFact {
        stages: &[
            (0.1, "I live in Tallinn."),
            (0.6, "We're in Ghent these days."),
        ],
        question: "Which city do we live in these days?",
        answer: "Ghent",
    },
    ScriptedFact {
        stages: &[
            (0.2, "My sister Marisol lives in Valencia."),
            (0.7, "Marisol moved to Bilbao last month."),
        ],
        question: "Where did my sister Marisol move to last month?",
        answer: "Bilbao",
    },
    ScriptedFact {
        stages: &[
            (0.25, "My cousin's wedding is in Lyon."),
            (0.55, "Sorry, I got that wrong: the wedding is in Nantes."),
            (0.85, "No wait, the wedding is in Lyon after all."),
        ],
        question: "Where is my cousin's wedding?",
        answer: "Lyon",
    },
    ScriptedFact {
        stages: &[(0.3, "I have a pet iguana called Zorba.")],
        question: "What is my pet iguana called?",
        answer: "Zorba",
    },
    ScriptedFact {
        stages: &[(0.35, "My preferred airline is Lufthansa.")],
        question: "What is my preferred airline?",
        answer: "Lufthansa",
    },
    ScriptedFact {
        stages: &[
            (0.4, "My favourite colour is amber."),
            (0.9, "Actually, my favourite colour is now indigo."),
        ],
        question: "What is my favourite colour now?",
        answer: "indigo",
    },
    ScriptedFact {
        stages: &[(0.45, "My parking spot number is B7.")],
        question: "What is my parking spot number?",
        answer: "B7",
    },
    ScriptedFact {
        stages: &[(0.5, "By the way, my gym locker number is K38.")],
        question: "What is my gym locker number?",
        answer: "K38",
    },
];

/// The script in the conversation's language: Chinese when the file says
/// `zh` or the conversation's first turns are in a CJK script.
pub fn script_for(language: Option<&str>, conv: &Conversation) -> &'static [ScriptedFact] {
    let cjk = conv
        .sessions
        .iter()
        .flat_map(|s| &s.turns)
        .take(4)
        .any(|t| t.text.chars().any(is_cjk));
    if language.is_some_and(|l| l.starts_with("zh")) || cjk {
        ZH
    } else {
        EN
    }
}

/// Each session's messages with `script` said in them, and its questions
/// (each with the session of its last statement as evidence).
pub fn apply(
    conv: &Conversation,
    sessions: &[&SessionData],
    script: &[ScriptedFact],
) -> (Vec<Vec<Message>>, Vec<Question>) {
    let n = sessions.len();
    let at = |frac: f64| ((frac * n as f64) as usize).min(n.saturating_sub(1));
    let zh = script
        .first()
        .and_then(|f| f.stages.first())
        .is_some_and(|(_, t)| t.chars().any(is_cjk));
    let ack = if zh {
        "好的，记住了。"
    } else {
        "Noted."
    };
    let mut said: Vec<Vec<Vec<Message>>> = vec![Vec::new(); n];
    let mut questions = Vec::new();
    for (k, fact) in script.iter().enumerate() {
        for (frac, text) in fact.stages {
            if let Some(s) = said.get_mut(at(*frac)) {
                s.push(vec![
                    Message::user(*text),
                    Message::new(Role::Assistant, ack),
                ]);
            }
        }
        if let (Some((last, _)), Some(_)) = (fact.stages.last(), sessions.first()) {
            questions.push(Question {
                qid: Some(format!("{}#scripted{k}", conv.conv_id)),
                conv_id: conv.conv_id.clone(),
                question: fact.question.to_string(),
                answer: serde_json::Value::String(fact.answer.to_string()),
                evidence_sessions: vec![sessions[at(*last)].session_id.clone()],
                ..Default::default()
            });
        }
    }
    let messages = sessions
        .iter()
        .zip(said)
        .map(|(s, extra)| {
            let real = session_messages(conv, s);
            let stamp = real.first().and_then(|m| m.timestamp.clone());
            let mut all = spread(&real, &extra);
            for m in all.iter_mut().filter(|m| m.timestamp.is_none()) {
                m.timestamp = stamp.clone();
            }
            all
        })
        .collect();
    (messages, questions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_based_model_reads_every_statement_right() {
        for script in [ZH, EN] {
            for fact in script {
                let turns: Vec<(Role, String)> = fact
                    .stages
                    .iter()
                    .map(|(_, t)| (Role::User, t.to_string()))
                    .collect();
                let found = crate::rule_model::conversation_statements(&turns);
                assert_eq!(
                    found.len(),
                    fact.stages.len(),
                    "{:?}: {found:?}",
                    fact.stages
                );
                assert!(
                    found.windows(2).all(|w| w[0].key() == w[1].key()),
                    "{found:?}"
                );
                assert_eq!(
                    found.last().and_then(|s| s.value.as_deref()),
                    Some(fact.answer)
                );
            }
        }
    }

    #[test]
    fn every_statement_is_said_and_every_question_has_its_session() {
        let conv: Conversation = serde_json::from_value(serde_json::json!({
            "conv_id": "u", "speakers": ["张曼婷", "AI"],
            "sessions": (1..=3).map(|d| serde_json::json!({
                "session_id": format!("2023-05-0{d}"), "date_time": format!("2023-05-0{d}"),
                "turns": [{"turn_id": format!("{d}#0"), "text": "张曼婷: 你好。\nAI: 你好！"}]
            })).collect::<Vec<_>>()
        }))
        .unwrap();
        let sessions: Vec<&SessionData> = conv.sessions.iter().collect();
        let script = script_for(None, &conv);
        assert_eq!(script[0].question, ZH[0].question);
        let (messages, questions) = apply(&conv, &sessions, script);
        assert_eq!(messages.len(), 3);
        let said: Vec<String> = messages.iter().flatten().map(Message::text).collect();
        for fact in script {
            for (_, text) in fact.stages {
                assert_eq!(said.iter().filter(|t| *t == text).count(), 1, "{text}");
            }
        }
        assert!(messages.iter().flatten().all(|m| m.timestamp.is_some()));
        assert_eq!(questions.len(), script.len());
        // The answer is in the session the question names, said last.
        for (q, fact) in questions.iter().zip(script) {
            let day = sessions
                .iter()
                .position(|s| s.session_id == q.evidence_sessions[0])
                .unwrap();
            let last = fact.stages.last().unwrap().1;
            assert!(
                messages[day].iter().any(|m| m.text() == last),
                "{}",
                q.question
            );
            assert!(last.contains(fact.answer), "{last}");
        }
    }
}
