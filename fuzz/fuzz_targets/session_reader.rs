//! The JSONL session reader (`mnemo_store::session::parse_session_bytes`)
//! on any bytes: complete lines are messages, records or warnings, a
//! partial last line is a torn tail, and the replay keeps the invariants a
//! model needs (it never opens with a tool result). Same checks as the
//! `fuzz_session_reader` test.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mnemo_store::session::{parse_session_bytes, replay};

fuzz_target!(|data: &[u8]| {
    let loaded = parse_session_bytes(Path::new("sessions/cli_direct.jsonl"), data);
    let lines = data.split(|b| *b == b'\n').count();
    for w in &loaded.warnings {
        assert!(w.line >= 1 && w.line <= lines, "{w:?}");
    }
    let replayed = replay(&loaded.messages, loaded.meta.last_consolidated);
    if let Some(first) = replayed.first() {
        assert_eq!(
            first.role.as_str(),
            "user",
            "a replay opens with a user message"
        );
    }
    for m in &loaded.messages {
        // What was read can be written again, and reads back as a message.
        let line = serde_json::to_vec(m).unwrap();
        let again = parse_session_bytes(Path::new("sessions/x.jsonl"), &line);
        assert_eq!(
            again.messages.len(),
            1,
            "{}",
            String::from_utf8_lossy(&line)
        );
    }
});
