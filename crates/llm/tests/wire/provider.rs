//! ProviderConfig resolution: file, environment and flag precedence.

use std::collections::HashMap;

use mnemo_core::Config;
use mnemo_llm::{build_chat_model, ErrorKind, ProviderConfig, ProviderKind, ProviderOverrides};
use pretty_assertions::assert_eq;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

const FILE: &str = r#"
[provider]
kind = "openai"
base_url = "http://localhost:11434/v1"
model = "qwen2.5:7b"
context_window = 32768
timeout_secs = 30
headers = { "X-Title" = "mnemo" }

[providers.claude]
kind = "anthropic"
model = "claude-sonnet"
api_key_env = "WORK_ANTHROPIC_KEY"

[providers.deepseek]
base_url = "https://api.deepseek.com/v1"
model = "deepseek-chat"
api_key_env = "DEEPSEEK_API_KEY"
"#;

#[test]
fn file_values_fill_the_defaults() {
    let cfg = Config::parse(FILE).unwrap();
    let p =
        ProviderConfig::resolve(&cfg, None, &ProviderOverrides::default(), &env_of(&[])).unwrap();
    let mut want = ProviderConfig::openai("http://localhost:11434/v1", "qwen2.5:7b");
    want.context_window = 32768;
    want.timeout_secs = 30.0;
    want.headers.insert("X-Title".into(), "mnemo".into());
    assert_eq!(p, want);
    assert_eq!(p.api_key_env, "OPENAI_API_KEY");
    assert_eq!(p.max_output, 8192);
    assert_eq!(p.max_retries, 3);
    assert!(p.api_key.is_none(), "a loopback server needs no key");
}

#[test]
fn environment_beats_file_and_flags_beat_environment() {
    let cfg = Config::parse(FILE).unwrap();
    let env = env_of(&[
        ("MNEMO_MODEL", "llama3.1:8b"),
        ("MNEMO_BASE_URL", "http://127.0.0.1:8000/v1"),
        ("MNEMO_API_KEY", "from-env"),
    ]);
    let p = ProviderConfig::resolve(&cfg, None, &ProviderOverrides::default(), &env).unwrap();
    assert_eq!(
        (p.model.as_str(), p.base_url.as_str()),
        ("llama3.1:8b", "http://127.0.0.1:8000/v1")
    );
    assert_eq!(p.api_key.as_deref(), Some("from-env"));

    let flags = ProviderOverrides {
        provider: None,
        base_url: Some("http://localhost:9999/v1".into()),
        model: Some("flag-model".into()),
    };
    let p = ProviderConfig::resolve(&cfg, None, &flags, &env).unwrap();
    assert_eq!(
        (p.model.as_str(), p.base_url.as_str()),
        ("flag-model", "http://localhost:9999/v1")
    );
    // Untouched fields still come from the file.
    assert_eq!(p.context_window, 32768);
}

#[test]
fn switching_kind_drops_the_files_endpoint() {
    let cfg = Config::parse(FILE).unwrap();
    let flags = ProviderOverrides {
        provider: Some("anthropic".into()),
        model: Some("claude-x".into()),
        ..Default::default()
    };
    let p = ProviderConfig::resolve(&cfg, None, &flags, &env_of(&[("ANTHROPIC_API_KEY", "k")]))
        .unwrap();
    assert_eq!(p.kind, ProviderKind::Anthropic);
    assert_eq!(p.base_url, "https://api.anthropic.com");
    assert_eq!(p.api_key_env, "ANTHROPIC_API_KEY");
    assert_eq!(p.api_key.as_deref(), Some("k"));
    assert_eq!(p.context_window, 200_000);
    assert_eq!(p.timeout_secs, 30.0, "kind-neutral settings stay");

    // The environment switches too, but a flag wins over it.
    let env = env_of(&[("MNEMO_PROVIDER", "anthropic"), ("OPENAI_API_KEY", "o")]);
    let flags = ProviderOverrides {
        provider: Some("openai".into()),
        ..Default::default()
    };
    let p = ProviderConfig::resolve(&cfg, None, &flags, &env).unwrap();
    assert_eq!(p.kind, ProviderKind::OpenAi);
    assert_eq!(p.base_url, "http://localhost:11434/v1");
}

#[test]
fn named_providers() {
    let cfg = Config::parse(FILE).unwrap();
    let env = env_of(&[("WORK_ANTHROPIC_KEY", "w"), ("DEEPSEEK_API_KEY", "d")]);
    let p =
        ProviderConfig::resolve(&cfg, Some("claude"), &ProviderOverrides::default(), &env).unwrap();
    assert_eq!(
        (p.kind, p.model.as_str(), p.api_key.as_deref()),
        (ProviderKind::Anthropic, "claude-sonnet", Some("w"))
    );
    assert_eq!(p.max_output, 8192);

    // --provider NAME selects a named section too.
    let flags = ProviderOverrides {
        provider: Some("deepseek".into()),
        ..Default::default()
    };
    let p = ProviderConfig::resolve(&cfg, None, &flags, &env).unwrap();
    assert_eq!(
        (p.base_url.as_str(), p.api_key.as_deref()),
        ("https://api.deepseek.com/v1", Some("d"))
    );

    let err = ProviderConfig::resolve(&cfg, Some("nope"), &ProviderOverrides::default(), &env)
        .unwrap_err();
    assert!(
        err.to_string().contains("[providers.nope]")
            && err.to_string().contains("claude, deepseek"),
        "{err}"
    );
    let flags = ProviderOverrides {
        provider: Some("gemini".into()),
        ..Default::default()
    };
    let err = ProviderConfig::resolve(&cfg, None, &flags, &env).unwrap_err();
    assert!(
        err.to_string().contains("unknown provider `gemini`"),
        "{err}"
    );
}

#[test]
fn missing_key_for_a_remote_endpoint_names_the_variable() {
    let cfg = Config::parse(FILE).unwrap();
    let err = ProviderConfig::resolve(
        &cfg,
        Some("deepseek"),
        &ProviderOverrides::default(),
        &env_of(&[]),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("DEEPSEEK_API_KEY"), "{err}");
}

#[test]
fn missing_model_says_how_to_set_it() {
    let cfg = Config::parse("").unwrap();
    let err = ProviderConfig::resolve(
        &cfg,
        None,
        &ProviderOverrides::default(),
        &env_of(&[("OPENAI_API_KEY", "k")]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("--model") && err.contains("MNEMO_MODEL"),
        "{err}"
    );
    let p = ProviderConfig::resolve(
        &cfg,
        None,
        &ProviderOverrides::default(),
        &env_of(&[("OPENAI_API_KEY", "k"), ("MNEMO_MODEL", "gpt-x")]),
    )
    .unwrap();
    assert_eq!(p.base_url, "https://api.openai.com/v1");
    assert_eq!(p.api_key.as_deref(), Some("k"));
    assert_eq!(p.context_window, 128_000);
}

#[test]
fn unknown_fields_and_bad_urls_are_config_errors() {
    let cfg = Config::parse("[provider]\nmodel = \"m\"\napi_key_var = \"X\"\n").unwrap();
    let err = ProviderConfig::resolve(&cfg, None, &ProviderOverrides::default(), &env_of(&[]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("[provider]") && err.contains("api_key_var"),
        "{err}"
    );

    let cfg = Config::parse("[provider]\nmodel = \"m\"\nbase_url = \"localhost:11434\"\n").unwrap();
    let err = ProviderConfig::resolve(&cfg, None, &ProviderOverrides::default(), &env_of(&[]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("http://"), "{err}");
}

#[test]
fn build_reports_model_info_and_key_is_redacted() {
    let mut p = ProviderConfig::anthropic("http://127.0.0.1:1", "claude-x");
    p.api_key = Some("super-secret".into());
    let m = build_chat_model(&p).unwrap();
    assert_eq!(m.info().provider, "anthropic");
    assert_eq!(m.info().model, "claude-x");
    assert_eq!(m.info().max_output, 8192);
    assert!(!format!("{p:?}").contains("super-secret"));
    assert!(!serde_json::to_string(&p).unwrap().contains("super-secret"));

    let mut remote = ProviderConfig::openai("https://api.example.com/v1", "m");
    remote.api_key_env = "MNEMO_TEST_SURELY_UNSET_KEY".into();
    let err = build_chat_model(&remote).err().unwrap();
    assert!(
        err.to_string().contains("MNEMO_TEST_SURELY_UNSET_KEY"),
        "{err}"
    );
}
