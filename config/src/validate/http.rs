//! `[http]`: the HTTP listener, its credentials and limits.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tsfiled_core::{ByteSize, Validator as V};

use crate::error::KeyPath;
use crate::model::{HttpConfig, HttpUser};
use crate::raw::RawHttp;

/// Validates `[http]` (at `hp`).
pub(super) fn validate_http(v: &mut V<'_>, rh: &RawHttp, hp: &KeyPath) -> HttpConfig {
    let listen = match &rh.listen {
        Some(s) => v.socket_addr(s, &hp.key("listen")),
        None => None,
    }
    .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080)));
    let mut tokens = Vec::new();
    for (i, t) in rh
        .tokens
        .clone()
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        if t.is_empty() || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
            v.err(
                &hp.key("tokens").index(i),
                "a token must be non-empty and contain no whitespace",
            );
        } else {
            tokens.push(t);
        }
    }
    let token_file = v
        .nonempty(&rh.token_file, &hp.key("token_file"))
        .map(PathBuf::from);
    let mut users: Vec<HttpUser> = Vec::new();
    for (i, u) in rh.user.iter().flatten().enumerate() {
        let up = hp.key("user").index(i);
        let name = v.required(&u.name, &up, "name").map(str::to_owned);
        if let Some(n) = &name {
            if let Err(e) = HttpUser::check_name(n) {
                v.err(&up.key("name"), e);
            } else if users.iter().any(|x| &x.name == n) {
                v.err(&up.key("name"), format!("user {n:?} is listed twice"));
            }
        }
        let password = match &u.password {
            None => {
                v.err(&up.key("password"), "missing required key `password`");
                None
            }
            Some(p) => match HttpUser::check_password(p) {
                Ok(()) => Some(p.clone()),
                Err(e) => {
                    v.err(&up.key("password"), e);
                    None
                }
            },
        };
        if let (Some(name), Some(password)) = (name, password) {
            if HttpUser::check_name(&name).is_ok() && !users.iter().any(|x| x.name == name) {
                users.push(HttpUser { name, password });
            }
        }
    }
    let user_file = v
        .nonempty(&rh.user_file, &hp.key("user_file"))
        .map(PathBuf::from);
    let max_body_size = v.size_min(
        &rh.max_body_size,
        &hp.key("max_body_size"),
        ByteSize::mib(16),
        ByteSize(1),
    );
    let max_decompressed_size = v.size(
        &rh.max_decompressed_size,
        &hp.key("max_decompressed_size"),
        ByteSize::mib(64).max(max_body_size),
    );
    if max_decompressed_size < max_body_size {
        v.err(
            &hp.key("max_decompressed_size"),
            format!(
                "{max_decompressed_size} is less than max_body_size ({max_body_size}); a decompressed body is never smaller than the limit on the raw body"
            ),
        );
    }
    let request_timeout = v.positive_duration(
        &rh.request_timeout,
        &hp.key("request_timeout"),
        Duration::from_secs(30),
    );
    HttpConfig {
        listen,
        tokens,
        token_file,
        users,
        user_file,
        max_body_size,
        max_decompressed_size,
        request_timeout,
    }
}
