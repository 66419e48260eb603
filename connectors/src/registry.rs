//! Every source type, keyed by its `type` value.
//!
//! The list is the `sources!` invocation in the crate root (`lib.rs`): one line per source,
//! `<folder>::<its SourceTable>`, which registers the type of the folder's module (declared by
//! a plain `pub mod <folder>;` beside it, so that rustfmt and cargo-mutants see the folder).
//! The configuration crate dispatches `[[pipeline.source]]` tables through [`find`], the
//! reference documents [`sources`], and the daemon starts what they validated to.

use crate::source::SourcePlugin;

/// Lists the [`SourceTable`] of each source folder in the registry.
///
/// [`SourceTable`]: crate::source::SourceTable
macro_rules! sources {
    ($($module:ident :: $table:ident),* $(,)?) => {
        #[doc(hidden)]
        pub static SOURCE_TYPES: &[&dyn $crate::source::SourcePlugin] =
            &[$(&$crate::source::Plugin::<$module::$table>::new()),*];
    };
}

/// The source types, in reference order.
pub fn sources() -> &'static [&'static dyn SourcePlugin] {
    crate::SOURCE_TYPES
}

/// The source type named `type_name`.
pub fn find(type_name: &str) -> Option<&'static dyn SourcePlugin> {
    sources()
        .iter()
        .copied()
        .find(|p| p.type_name() == type_name)
}

/// The type names, for messages: `"http", "mqtt", "csv" or "exec"`.
pub fn type_names() -> String {
    let names: Vec<&str> = sources().iter().map(|p| p.type_name()).collect();
    tsfiled_core::choices_text(&names)
}
