//! `docs/configuration.md` is exactly what the config crate generates.

#[path = "../examples/gen_reference.rs"]
#[allow(dead_code)]
mod gen_reference;

const REGENERATE: &str =
    "regenerate it: cargo run -p tsfiled-config --example gen_reference > docs/configuration.md";

#[test]
fn committed_reference_matches_the_config_crate() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md");
    let committed =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}; {REGENERATE}"));
    let generated = gen_reference::document();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "docs/configuration.md is out of date (first difference at line {}):\n  committed: {:?}\n  generated: {:?}\n{REGENERATE}",
            line + 1,
            committed.lines().nth(line).unwrap_or("<end of file>"),
            generated.lines().nth(line).unwrap_or("<end of file>"),
        );
    }
}

#[test]
fn reference_documents_every_key_with_type_and_default() {
    let doc = gen_reference::document();
    let keys = tsfiled_config::reference();
    assert!(keys.len() > 50, "only {} keys", keys.len());
    for k in &keys {
        assert!(
            doc.contains(&format!("| `{}` |", k.path)),
            "{} missing from the document",
            k.path
        );
        assert!(
            !k.ty.is_empty() && !k.default.is_empty() && !k.doc.is_empty(),
            "{k:?}"
        );
    }
    for example in ["mqtt.toml", "csv.toml", "http-telegraf.toml"] {
        assert!(
            doc.contains(&format!("(../config/examples/{example})")),
            "{example}"
        );
    }
    assert!(doc.contains(tsfiled_config::DEFAULT_CONFIG.trim_end()));
}
