//! The user-name login keys (`username`, `password`, `password_file`) of the sources that
//! log in to a server with them (mqtt, nats): declared, documented and validated once.
//!
//! The keys are fields of each source's raw table, not a nested serde struct: a flattened
//! struct cannot refuse unknown keys (`deny_unknown_fields`) nor report where a misspelled key
//! is. [`login_table!`](crate::source::login_table) splices them into the table's
//! declaration instead.

use tsfiled_core::{KeyPath, Validator};

use super::Secret;

/// Declares a source's raw table with [`config_table!`](tsfiled_core::config_table), the login
/// keys `username`, `password` and `password_file` placed between the two groups of keys, and
/// `login`/`set_login` methods that validate and write them back.
///
/// ```text
/// login_table! {
///     /// `type = "x"`: …
///     pub struct XTable {
///         // keys before the login keys
///     }
///     {
///         // keys after them
///     }
/// }
/// ```
macro_rules! login_table {
    (
        $(#[doc = $sdoc:literal])*
        pub struct $name:ident {
            $($before:tt)*
        }
        {
            $($after:tt)*
        }
    ) => {
        tsfiled_core::config_table! {
            $(#[doc = $sdoc])*
            pub struct $name {
                $($before)*
                /// User name to log in with.
                #[key("username", "string", "none")]
                username: Option<String>,
                /// Password (prefer `password_file`); needs `username`, except over MQTT 5.
                #[key("password", "string", "none")]
                password: Option<String>,
                /// File holding the password (trailing newline ignored), e.g. a systemd
                /// credential under `$CREDENTIALS_DIRECTORY`.
                #[key("password_file", "path", "none")]
                password_file: Option<String>,
                $($after)*
            }
        }

        impl $name {
            /// Validates the login keys of this table at `at`.
            pub(crate) fn login(
                &self,
                v: &mut tsfiled_core::Validator<'_>,
                at: &tsfiled_core::KeyPath,
            ) -> $crate::source::Login {
                $crate::source::Login::from_keys(
                    v,
                    at,
                    &self.username,
                    &self.password,
                    &self.password_file,
                )
            }

            /// Writes `login` back as the keys of the effective configuration; `redact` hides
            /// an inline password.
            pub(crate) fn set_login(
                &mut self,
                login: &$crate::source::Login,
                redact: &dyn Fn(&str) -> String,
            ) {
                self.username = login.username.clone();
                (self.password, self.password_file) =
                    $crate::source::Secret::to_keys(login.password.as_ref(), redact);
            }
        }
    };
}

pub(crate) use login_table;

/// A user name and password as the login keys give them (each optional).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Login {
    /// `username`.
    pub username: Option<String>,
    /// `password` or `password_file`.
    pub password: Option<Secret>,
}

impl Login {
    /// Validates the three keys of the table at `at`: `username` not blank, at most one of
    /// `password` and `password_file`, neither blank.
    pub fn from_keys(
        v: &mut Validator<'_>,
        at: &KeyPath,
        username: &Option<String>,
        password: &Option<String>,
        password_file: &Option<String>,
    ) -> Login {
        Login {
            username: v.nonempty(username, &at.key("username")),
            password: Secret::from_keys(v, password, password_file, at, "password"),
        }
    }

    /// Refuses a password without a user name with `message`, at the password key written.
    pub fn needs_username(&self, v: &mut Validator<'_>, at: &KeyPath, message: &str) {
        let key = match (&self.username, &self.password) {
            (None, Some(Secret::Inline(_))) => "password",
            (None, Some(Secret::File(_))) => "password_file",
            _ => return,
        };
        v.err_key(&at.key(key), message);
    }
}
