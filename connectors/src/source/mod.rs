//! The source plugin API: what a connector implements to become a `[[pipeline.source]]` type.
//!
//! A source is one folder (`connectors/src/<name>/`) plus two lines in the crate root
//! (`pub mod <name>;` and its line in the `sources!` list of [`crate::registry`]). It
//! declares:
//!
//! - its **raw table** ([`SourceTable`]): a serde struct declared with
//!   [`config_table!`](tsfiled_core::config_table) (unknown keys refused, every key optional and
//!   documented with its type and default; the configuration reference is generated from it);
//! - its **validation** ([`SourceTable::validate`]): raw values to typed ones through a
//!   [`Validator`], which names the file, line and key of every problem;
//! - its **settings** ([`SourceSettings`]): the validated, comparable configuration; a reload
//!   restarts the source exactly when its settings changed (`PartialEq`);
//! - its **run** ([`SourceSettings::start`]): a future given a [`SourceContext`] (the
//!   pipeline's sink, a cancellation token, metrics pre-labelled with pipeline and source, a
//!   state directory, a status reporter).
//!
//! The configuration crate dispatches each `[[pipeline.source]]` table to the plugin its `type`
//! names; the daemon starts, reloads and reports sources only through these traits.

mod context;
mod login;
mod secret;
mod shared;
mod testing;
pub mod written;

use std::any::Any;
use std::fmt::Debug;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tsfiled_core::probe::CheckItem;
use tsfiled_core::{ConfigTable, FieldDoc, KeyPath, Validator};

pub use context::{Counter, Gauge, NoSourceMetrics, SourceContext, SourceMetrics, StatusReporter};
pub(crate) use login::login_table;
pub use login::Login;
pub use secret::Secret;
pub use shared::{line_mapping, LineProtocolMapping};
pub use testing::{validate_table, RecordingMetrics};

/// What a running source returns: `Ok` after a clean stop (its token was cancelled), else why
/// it gave up.
pub type SourceFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'static>>;

/// What a source's validation knows about the pipeline around it.
#[derive(Debug, Clone, Copy)]
pub struct SourceEnv<'a> {
    /// The source's name (unique in its pipeline).
    pub name: &'a str,
    /// The pipeline's `storage.data_dir` (for defaults such as dead-letter files).
    pub data_dir: &'a Path,
    /// The pipeline's `storage.line_protocol_model` (how line protocol is mapped).
    pub line_protocol_model: tsfiled_core::LineProtocolModel,
}

/// The raw table of one source type, as written (stage one), and its validation (stage two).
///
/// Implemented by a `config_table!` struct (which gives its keys and its `name`); the
/// registry entry is [`Plugin<Self>`](Plugin).
pub trait SourceTable:
    ConfigTable
    + Debug
    + Clone
    + Default
    + PartialEq
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The `type` value, e.g. `"mqtt"`.
    const TYPE: &'static str;
    /// One sentence for the reference: what this source does.
    const SUMMARY: &'static str;
    /// A minimal valid table (its keys, without `type`), for the reference and for tests that
    /// exercise every registered source.
    const EXAMPLE: &'static str;
    /// The validated form.
    type Settings: SourceSettings;

    /// The documented keys: `("", Self::KEYS)` and any sub-tables (`("topic[].", …)`).
    fn tables() -> Vec<(&'static str, &'static [FieldDoc])> {
        vec![("", <Self as ConfigTable>::KEYS)]
    }

    /// Validates the table at `at`; reports every problem through `v` and returns `None` if
    /// there was one.
    fn validate(
        &self,
        v: &mut Validator<'_>,
        at: &KeyPath,
        env: &SourceEnv<'_>,
    ) -> Option<Self::Settings>;
}

/// The validated configuration of one source: comparable (reload), printable as the effective
/// configuration, checkable against the machine, and runnable.
pub trait SourceSettings: Debug + Clone + PartialEq + Send + Sync + 'static {
    /// Its raw table.
    type Table: SourceTable<Settings = Self>;

    /// The raw table with every default written out (`tsfiled check-config` prints it);
    /// `secret` redacts passwords and tokens.
    fn to_table(&self, name: &str, secret: &dyn Fn(&str) -> String) -> Self::Table;

    /// Machine checks for `check-config` (files readable, directories writable); `at` is the
    /// source's key path, e.g. `pipeline[0].source[1]`.
    fn check(&self, _at: &str, _out: &mut Vec<CheckItem>) {}

    /// The state shown on the status page until the source reports one.
    fn initial_state(&self) -> &'static str {
        "starting"
    }

    /// For a source served by the daemon's HTTP listener (it has no task of its own): its
    /// endpoints.
    fn http_push(&self) -> Option<&crate::http::HttpSourceConfig> {
        None
    }

    /// Starts the source: a future that feeds `cx.sink` until `cx.shutdown` is cancelled.
    fn start(&self, cx: SourceContext) -> SourceFuture;
}

// ---------------------------------------------------------------------------------------------
// Type erasure: what the registry, the configuration crate and the daemon hold.
// ---------------------------------------------------------------------------------------------

/// A source type in the registry (object-safe view of [`SourceTable`]).
pub trait SourcePlugin: Send + Sync + 'static {
    /// The `type` value.
    fn type_name(&self) -> &'static str;
    /// One sentence for the reference.
    fn summary(&self) -> &'static str;
    /// A minimal valid table (see [`SourceTable::EXAMPLE`]).
    fn example(&self) -> &'static str;
    /// The documented keys, by table prefix relative to the source table.
    fn tables(&self) -> Vec<(&'static str, &'static [FieldDoc])>;
    /// Stage one: deserializes the source table (`type` already removed).
    fn deserialize(
        &self,
        de: toml::de::ValueDeserializer<'_>,
    ) -> Result<Box<dyn RawSource>, toml::de::Error>;
}

/// The registry entry of the source whose raw table is `T`.
pub struct Plugin<T>(std::marker::PhantomData<fn() -> T>);

impl<T> Plugin<T> {
    /// The entry (for `static` registries).
    pub const fn new() -> Self {
        Plugin(std::marker::PhantomData)
    }
}

impl<T> Default for Plugin<T> {
    fn default() -> Self {
        Plugin::new()
    }
}

impl<T: SourceTable> SourcePlugin for Plugin<T> {
    fn type_name(&self) -> &'static str {
        T::TYPE
    }
    fn summary(&self) -> &'static str {
        T::SUMMARY
    }
    fn example(&self) -> &'static str {
        T::EXAMPLE
    }
    fn tables(&self) -> Vec<(&'static str, &'static [FieldDoc])> {
        T::tables()
    }
    fn deserialize(
        &self,
        de: toml::de::ValueDeserializer<'_>,
    ) -> Result<Box<dyn RawSource>, toml::de::Error> {
        serde::Deserialize::deserialize(de).map(|t: T| Box::new(t) as Box<dyn RawSource>)
    }
}

/// A raw source table of any type (object-safe view of [`SourceTable`]).
pub trait RawSource: Debug + Send + Sync {
    /// The `type` value.
    fn type_name(&self) -> &'static str;
    /// The `name` key as written.
    fn name(&self) -> Option<&str>;
    /// Stage two (see [`SourceTable::validate`]).
    fn validate(
        &self,
        v: &mut Validator<'_>,
        at: &KeyPath,
        env: &SourceEnv<'_>,
    ) -> Option<Arc<dyn DynSettings>>;
    /// The table as TOML (without `type`).
    fn to_toml(&self) -> Result<toml::Table, toml::ser::Error>;
    /// A boxed copy.
    fn clone_box(&self) -> Box<dyn RawSource>;
    /// Whether `other` is the same type with equal keys.
    fn same(&self, other: &dyn RawSource) -> bool;
    /// For [`RawSource::same`].
    fn as_any(&self) -> &dyn Any;
}

impl<T: SourceTable> RawSource for T {
    fn type_name(&self) -> &'static str {
        T::TYPE
    }
    fn name(&self) -> Option<&str> {
        ConfigTable::name(self)
    }
    fn validate(
        &self,
        v: &mut Validator<'_>,
        at: &KeyPath,
        env: &SourceEnv<'_>,
    ) -> Option<Arc<dyn DynSettings>> {
        SourceTable::validate(self, v, at, env).map(|s| Arc::new(s) as Arc<dyn DynSettings>)
    }
    fn to_toml(&self) -> Result<toml::Table, toml::ser::Error> {
        toml::Table::try_from(self)
    }
    fn clone_box(&self) -> Box<dyn RawSource> {
        Box::new(self.clone())
    }
    fn same(&self, other: &dyn RawSource) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Clone for Box<dyn RawSource> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

impl PartialEq for Box<dyn RawSource> {
    fn eq(&self, other: &Self) -> bool {
        self.same(other.as_ref())
    }
}

/// Validated settings of any source type (object-safe view of [`SourceSettings`]).
pub trait DynSettings: Debug + Send + Sync {
    /// The `type` value.
    fn type_name(&self) -> &'static str;
    /// See [`SourceSettings::to_table`].
    fn to_raw(&self, name: &str, secret: &dyn Fn(&str) -> String) -> Box<dyn RawSource>;
    /// See [`SourceSettings::check`].
    fn check(&self, at: &str, out: &mut Vec<CheckItem>);
    /// See [`SourceSettings::initial_state`].
    fn initial_state(&self) -> &'static str;
    /// See [`SourceSettings::http_push`].
    fn http_push(&self) -> Option<&crate::http::HttpSourceConfig>;
    /// See [`SourceSettings::start`].
    fn start(&self, cx: SourceContext) -> SourceFuture;
    /// Whether `other` is the same type with equal settings (a reload keeps the source
    /// running exactly then).
    fn same(&self, other: &dyn DynSettings) -> bool;
    /// The concrete settings (tests, and the source's own code).
    fn as_any(&self) -> &dyn Any;
}

impl<S: SourceSettings> DynSettings for S {
    fn type_name(&self) -> &'static str {
        <S::Table as SourceTable>::TYPE
    }
    fn to_raw(&self, name: &str, secret: &dyn Fn(&str) -> String) -> Box<dyn RawSource> {
        Box::new(self.to_table(name, secret))
    }
    fn check(&self, at: &str, out: &mut Vec<CheckItem>) {
        SourceSettings::check(self, at, out)
    }
    fn initial_state(&self) -> &'static str {
        SourceSettings::initial_state(self)
    }
    fn http_push(&self) -> Option<&crate::http::HttpSourceConfig> {
        SourceSettings::http_push(self)
    }
    fn start(&self, cx: SourceContext) -> SourceFuture {
        SourceSettings::start(self, cx)
    }
    fn same(&self, other: &dyn DynSettings) -> bool {
        other.as_any().downcast_ref::<S>() == Some(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl dyn DynSettings {
    /// The concrete settings if they are of type `S`.
    pub fn downcast_ref<S: SourceSettings>(&self) -> Option<&S> {
        self.as_any().downcast_ref::<S>()
    }
}
