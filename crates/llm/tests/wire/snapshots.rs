//! insta snapshots of the request bodies for one representative request
//! with tools, in both protocols: a change of wire shape shows as a diff.

use mnemo_llm::{AnthropicChat, OpenAiChat};

use crate::common::{anthropic_config, openai_config, sample_request};

#[test]
fn openai_request_body() {
    let model = OpenAiChat::new(&openai_config("http://127.0.0.1:9/v1".into())).unwrap();
    insta::assert_json_snapshot!(model.request_body(&sample_request()));
}

#[test]
fn anthropic_request_body() {
    let model = AnthropicChat::new(&anthropic_config("http://127.0.0.1:9".into())).unwrap();
    insta::assert_json_snapshot!(model.request_body(&sample_request()));
}
