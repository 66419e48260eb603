//! Validating one source table on its own, for the tests of a source.

use std::path::Path;

use toml::de::{DeTable, Deserializer};
use toml::Spanned;
use tsfiled_core::{KeyPath, SpanIndex, Validator};

use super::{SourceEnv, SourceTable};

/// Validates `text`, the keys of one `[[pipeline.source]]` table of type `T` (without `type`),
/// as the configuration would (the pipeline's data directory is `data`). Problems come back as
/// `line:column: key: message`, the key relative to the table.
pub fn validate_table<T: SourceTable>(text: &str) -> Result<T::Settings, Vec<String>> {
    let root = DeTable::parse(text).map_err(|e| vec![e.to_string()])?;
    let spans = SpanIndex::new(text, &root);
    let render = |d: &tsfiled_core::Diagnostic| {
        if d.path.is_root() {
            format!("{}:{}: {}", d.line, d.column, d.message)
        } else {
            format!("{}:{}: {}: {}", d.line, d.column, d.path, d.message)
        }
    };
    let span = root.span();
    let table =
        T::deserialize(Deserializer::from(Spanned::new(span, root.into_inner()))).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            vec![render(&spans.at_span(
                spans.path_at(&span),
                &span,
                e.message().to_string(),
            ))]
        })?;
    let mut v = Validator {
        spans: &spans,
        diags: Vec::new(),
    };
    let name = table.name().unwrap_or(T::TYPE).to_string();
    let env = SourceEnv {
        name: &name,
        data_dir: Path::new("data"),
    };
    match table.validate(&mut v, &KeyPath::root(), &env) {
        Some(s) if v.diags.is_empty() => Ok(s),
        _ => Err(v.diags.iter().map(render).collect()),
    }
}
