//! The dead-letter file: one JSON object per line for every message that could not be
//! ingested (wholly or in part).
//!
//! Fields: `time` (RFC 3339, UTC, ms), `source`, `topic`, `qos`, `reason` (the bounded metric
//! label), `error` (human-readable, with locations), `partial` (true when some points of the
//! message were still ingested), `payload_bytes`, and either `payload` (the payload as a JSON
//! string when it is UTF-8) or `payload_base64`; `truncated` is true when only the first
//! `max_payload_bytes` were kept.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::Error;

/// One dead-letter entry.
#[derive(Debug)]
pub(crate) struct Letter<'a> {
    pub topic: &'a str,
    pub qos: u8,
    pub reason: &'static str,
    pub error: &'a str,
    pub partial: bool,
    pub payload: &'a [u8],
}

/// Appends entries to the dead-letter file (or only logs when there is none).
#[derive(Debug)]
pub(crate) struct DeadLetters {
    source: String,
    file: Option<(PathBuf, File)>,
    max_payload: usize,
    line: Vec<u8>,
}

impl DeadLetters {
    /// Opens (creating, appending) `path`.
    pub fn open(
        source: &str,
        path: Option<&Path>,
        max_payload: usize,
    ) -> Result<DeadLetters, Error> {
        let file = match path {
            None => None,
            Some(p) => {
                if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        Error::io(format!("mqtt dead_letter file {}", dir.display()), &e)
                    })?;
                }
                let f = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| Error::io(format!("mqtt dead_letter file {}", p.display()), &e))?;
                Some((p.to_path_buf(), f))
            }
        };
        Ok(DeadLetters {
            source: source.to_string(),
            file,
            max_payload,
            line: Vec::new(),
        })
    }

    /// Records one entry; write failures are logged, never fatal.
    pub fn write(&mut self, letter: &Letter<'_>) {
        tracing::warn!(
            source = %self.source,
            topic = letter.topic,
            reason = letter.reason,
            "mqtt message not (fully) ingested: {}",
            letter.error
        );
        let Some((path, file)) = self.file.as_mut() else {
            return;
        };
        self.line.clear();
        encode(
            &mut self.line,
            &self.source,
            letter,
            self.max_payload,
            now_millis(),
        );
        if let Err(e) = file.write_all(&self.line) {
            tracing::error!(
                "cannot append to the dead-letter file {}: {e}",
                path.display()
            );
        }
    }
}

fn now_millis() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    // serde_json writes a valid JSON string for any &str; writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Encodes one entry as a JSON line.
fn encode(out: &mut Vec<u8>, source: &str, l: &Letter<'_>, max_payload: usize, millis: i64) {
    out.extend_from_slice(b"{\"time\":\"");
    rfc3339_millis(out, millis);
    out.extend_from_slice(b"\",\"source\":");
    json_str(out, source);
    out.extend_from_slice(b",\"topic\":");
    json_str(out, l.topic);
    out.extend_from_slice(format!(",\"qos\":{}", l.qos).as_bytes());
    out.extend_from_slice(b",\"reason\":");
    json_str(out, l.reason);
    out.extend_from_slice(b",\"error\":");
    json_str(out, l.error);
    out.extend_from_slice(format!(",\"partial\":{}", l.partial).as_bytes());
    out.extend_from_slice(format!(",\"payload_bytes\":{}", l.payload.len()).as_bytes());
    let truncated = l.payload.len() > max_payload;
    let kept = l.payload.get(..max_payload).unwrap_or(l.payload);
    match std::str::from_utf8(kept) {
        Ok(s) => {
            out.extend_from_slice(b",\"payload\":");
            json_str(out, s);
        }
        Err(_) => {
            out.extend_from_slice(b",\"payload_base64\":\"");
            base64(out, kept);
            out.push(b'"');
        }
    }
    if truncated {
        out.extend_from_slice(b",\"truncated\":true");
    }
    out.extend_from_slice(b"}\n");
}

/// Standard base64 with padding.
fn base64(out: &mut Vec<u8>, data: &[u8]) {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut chunks = data.chunks_exact(3);
    for c in &mut chunks {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        for shift in [18, 12, 6, 0] {
            out.push(T[((n >> shift) & 63) as usize]);
        }
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.extend_from_slice(&[T[(n >> 18) as usize], T[((n >> 12) & 63) as usize]]);
            out.extend_from_slice(b"==");
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.extend_from_slice(&[
                T[(n >> 18) as usize],
                T[((n >> 12) & 63) as usize],
                T[((n >> 6) & 63) as usize],
            ]);
            out.push(b'=');
        }
        _ => {}
    }
}

/// Writes `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the Unix epoch.
fn rfc3339_millis(out: &mut Vec<u8>, millis: i64) {
    let secs = millis.div_euclid(1000);
    let ms = millis.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    out.extend_from_slice(
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
            sod / 3600,
            sod % 3600 / 60,
            sod % 60
        )
        .as_bytes(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &[u8]) -> String {
        let mut v = Vec::new();
        base64(&mut v, s);
        String::from_utf8(v).unwrap()
    }

    fn time(ms: i64) -> String {
        let mut v = Vec::new();
        rfc3339_millis(&mut v, ms);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn base64_vectors() {
        // RFC 4648 section 10.
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(b64(i.as_bytes()), o);
        }
        assert_eq!(b64(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn times() {
        assert_eq!(time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(time(1_586_076_045_524), "2020-04-05T08:40:45.524Z");
        assert_eq!(time(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(time(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn entries_are_json_lines() {
        let mut out = Vec::new();
        let l = Letter {
            topic: "a/\"b\"",
            qos: 1,
            reason: "parse",
            error: "line 1, column 2: bad",
            partial: false,
            payload: b"{bad\n",
        };
        encode(&mut out, "src", &l, 100, 0);
        assert_eq!(out.last(), Some(&b'\n'));
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["time"], "1970-01-01T00:00:00.000Z");
        assert_eq!(v["topic"], "a/\"b\"");
        assert_eq!(v["qos"], 1);
        assert_eq!(v["reason"], "parse");
        assert_eq!(v["payload"], "{bad\n");
        assert_eq!(v["payload_bytes"], 5);
        assert!(v.get("truncated").is_none());

        out.clear();
        let l = Letter {
            payload: &[0xff, 0, 1, 2, 3],
            ..l
        };
        encode(&mut out, "src", &l, 3, 0);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["payload_base64"], "/wAB");
        assert_eq!(v["payload_bytes"], 5);
        assert_eq!(v["truncated"], true);
    }

    #[test]
    fn appends_to_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/dead.jsonl");
        let mut dl = DeadLetters::open("s", Some(&path), 10).unwrap();
        let l = Letter {
            topic: "t",
            qos: 0,
            reason: "too_large",
            error: "e",
            partial: false,
            payload: b"x",
        };
        dl.write(&l);
        dl.write(&l);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
    }
}
