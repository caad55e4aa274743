use super::*;

#[test]
fn replaces_a_section_up_to_the_next_heading() {
    let text = "# Memory\n\n## Preferences\n\n- tea\n\n## People\n\n- Ana\n";
    let (out, replaced) = replace_section(text, "preferences", "- coffee");
    assert!(replaced);
    assert_eq!(
        out,
        "# Memory\n\n## Preferences\n\n- coffee\n\n## People\n\n- Ana\n"
    );
}

#[test]
fn replaces_the_last_section() {
    let text = "## A\n\nx\n\n## B\n\ny\n";
    let (out, replaced) = replace_section(text, "B", "z");
    assert!(replaced);
    assert_eq!(out, "## A\n\nx\n\n## B\n\nz\n");
}

#[test]
fn appends_a_missing_section() {
    let (out, replaced) = replace_section("# Memory\n", "Todos", "- ship");
    assert!(!replaced);
    assert_eq!(out, "# Memory\n\n## Todos\n\n- ship\n");
    let (out, _) = replace_section("", "Todos", "- ship");
    assert_eq!(out, "## Todos\n\n- ship\n");
}

#[test]
fn write_args_parse_by_mode() {
    let a: WriteArgs = serde_json::from_value(json!({"mode": "daily", "text": "x"})).unwrap();
    assert!(matches!(a, WriteArgs::Daily { .. }));
    let a: WriteArgs = serde_json::from_value(
        json!({"mode": "typed", "name": "n", "description": "d", "type": "user", "body": "b"}),
    )
    .unwrap();
    assert!(matches!(a, WriteArgs::Typed { .. }));
    assert!(serde_json::from_value::<WriteArgs>(json!({"mode": "nope", "text": "x"})).is_err());
    assert!(serde_json::from_value::<WriteArgs>(json!({"mode": "daily"})).is_err());
}
