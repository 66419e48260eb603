//! Stage one helpers: [`config_table!`](crate::config_table) declares a raw TOML table (serde
//! struct refusing unknown keys, every field optional, each documented with its key, type,
//! default and meaning for the generated reference); [`Human`] holds sizes and durations as
//! written.

use serde::{Deserialize, Serialize};

/// Facts about one key, recorded next to its field by [`config_table!`](crate::config_table).
#[derive(Debug, Clone, Copy)]
pub struct FieldDoc {
    /// The TOML key.
    pub key: &'static str,
    /// Its type as written in TOML.
    pub ty: &'static str,
    /// Its default (a TOML value or words).
    pub default: &'static str,
    /// Its meaning (the field's doc comment).
    pub doc: &'static str,
}

/// A raw table declared with [`config_table!`](crate::config_table): its documented keys and
/// its `name` key.
pub trait ConfigTable {
    /// The documented keys of the table, in declaration order.
    const KEYS: &'static [FieldDoc];

    /// The `name` key as written (`None` also for a table without one).
    fn name(&self) -> Option<&str>;
}

/// Declares a raw configuration table: a serde struct with `deny_unknown_fields`, one
/// `#[key("toml-key", "type", "default")]` line per field, a `KEYS` table with the same
/// facts and the field's doc comment, and its [`ConfigTable`] implementation (a `"name"` key
/// is the table's name).
#[macro_export]
macro_rules! config_table {
    (@name "name", $value:expr) => {
        return $value.as_deref();
    };
    (@name $key:tt, $value:expr) => {};
    (
        $(#[doc = $sdoc:literal])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                #[key($key:tt, $ty:literal, $default:literal)]
                $(#[$attr:meta])*
                $field:ident : $fty:ty,
            )*
        }
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, Default, PartialEq, $crate::serde::Deserialize, $crate::serde::Serialize)]
        #[serde(crate = "tsfiled_core::serde", deny_unknown_fields)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!("Key `", $key, "`; type: ", $ty, "; default: ", $default, ".")]
                #[serde(rename = $key)]
                $(#[$attr])*
                pub $field: $fty,
            )*
        }

        impl $name {
            /// The documented keys of this table, in declaration order.
            pub const KEYS: &'static [$crate::FieldDoc] = &[
                $($crate::FieldDoc { key: $key, ty: $ty, default: $default, doc: concat!($($doc, "\n",)*) },)*
            ];
        }

        impl $crate::ConfigTable for $name {
            const KEYS: &'static [$crate::FieldDoc] = $name::KEYS;

            #[allow(unreachable_code)]
            fn name(&self) -> Option<&str> {
                $($crate::config_table!(@name $key, self.$field);)*
                None
            }
        }
    };
}

/// A value written either as a string (`"64MiB"`, `"30s"`) or as an integer; stage two
/// decides what it means (a size in bytes; a bare integer duration is refused with a hint).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Human {
    /// An integer.
    Int(i64),
    /// A string.
    Text(String),
}

impl<'de> Deserialize<'de> for Human {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Human;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string such as \"64MiB\" or \"30s\", or an integer")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Human, E> {
                Ok(Human::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Human, E> {
                i64::try_from(v)
                    .map(Human::Int)
                    .map_err(|_| E::custom("integer too large"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Human, E> {
                Ok(Human::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}
