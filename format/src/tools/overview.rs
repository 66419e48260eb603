//! `tsfiled overview DIR[,DIR...]`: an overview of IoTDB data directories, modelled on
//! IoTDB's `IoTDBDataDirViewer`.
//!
//! Layout walked (spec §9.3):
//! `<data dir>/{sequence,unsequence}/<storage group>/<time partition>/<files>`. Output:
//!
//! ```text
//! |==============================================================
//! |/var/lib/iotdb/data
//! |--sequence
//! |  |--root.sg1
//! |  |  |--0
//! |  |  |  |--1593302400000-1-0.tsfile
//! |  |  |  |--1593302400000-1-0.tsfile.resource
//! |  |  |  |  |--device root.sg1.d1, start time 1593302400000 (2020-06-28T08:00:00.000+08:00), end time ...
//! |--unsequence
//! |==============================================================
//! ```
//!
//! Entries are sorted: storage groups by name, partitions numerically, files by the
//! numbers in their `<millis>-<version>-<merge>` names, then by name. A `.resource`'s
//! devices are sorted by name (as the Java viewer does). A TsFile's name is followed by
//! the format its head shows (`(TsFile format 000002)` or `(TsFile format v4)`); IoTDB
//! 2.x names (`<millis>-<version>-<inner>-<cross>`) and `.resource` files (of v4 files,
//! [`ResourceV4`]) are read too. Problems (unreadable
//! directories or resources, a missing `sequence`/`unsequence`, a TsFile without
//! `.resource`) are shown in place and counted.

use crate::errors::{Error, Result};
use crate::resource::{ResourceV4, TsFileResource, RESOURCE_SUFFIX, TSFILE_SUFFIX};
use crate::tools::resource_print::device_line;
use chrono::TimeZone;
use std::fmt::Display;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

const RULE: &str = "|==============================================================";

/// Splits a `DIR[,DIR...]` argument (empty parts are dropped).
pub fn parse_dir_list(arg: &str) -> Vec<PathBuf> {
    arg.split(',')
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Directory entries as `(name, path, is_dir)`, or the error text.
fn entries(dir: &Path) -> std::result::Result<Vec<(String, PathBuf, bool)>, String> {
    let rd = fs::read_dir(dir).map_err(|e| e.to_string())?;
    let mut v = Vec::new();
    for e in rd {
        let e = e.map_err(|e| e.to_string())?;
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        v.push((name, path.clone(), path.is_dir()));
    }
    Ok(v)
}

/// Sort key of a file in a partition directory: the TsFile name numbers, then the name.
fn file_key(name: &str) -> (bool, Option<Vec<i64>>, String) {
    // `<millis>-<version>-<merge>` (IoTDB 0.10) or `<millis>-<version>-<inner>-<cross>`
    // (IoTDB 2.x), then `.tsfile` and any further suffix.
    let nums = name.find(TSFILE_SUFFIX).and_then(|i| {
        let parts: Vec<&str> = name[..i].split('-').collect();
        if parts.len() == 3 || parts.len() == 4 {
            parts.iter().map(|p| p.parse::<i64>().ok()).collect()
        } else {
            None
        }
    });
    (nums.is_none(), nums, name.to_owned())
}

/// Sort key of a partition directory: numeric ids first, in numeric order.
fn partition_key(name: &str) -> (bool, i64, String) {
    match name.parse::<i64>() {
        Ok(n) => (false, n, name.to_owned()),
        Err(_) => (true, 0, name.to_owned()),
    }
}

/// Writes the overview of every data directory; returns the number of problems shown.
/// Fails only when writing to `out` fails or a data directory has neither `sequence`
/// nor `unsequence` (most likely a wrong path).
pub fn overview<Tz: TimeZone>(data_dirs: &[PathBuf], tz: &Tz, out: &mut impl Write) -> Result<usize>
where
    Tz::Offset: Display,
{
    let mut problems = 0;
    for dir in data_dirs {
        let seq = dir.join("sequence");
        let unseq = dir.join("unsequence");
        if !seq.is_dir() && !unseq.is_dir() {
            return Err(Error::invalid(format_args!(
                "{} is not an IoTDB data directory: it has no sequence/ or unsequence/ directory",
                dir.display()
            )));
        }
        writeln!(out, "{RULE}")?;
        writeln!(out, "|{}", dir.display())?;
        for (label, sub) in [("sequence", &seq), ("unsequence", &unseq)] {
            if sub.is_dir() {
                writeln!(out, "|--{label}")?;
                problems += storage_groups(sub, tz, out)?;
            } else {
                writeln!(out, "|--{label} (missing)")?;
                problems += 1;
            }
        }
    }
    writeln!(out, "{RULE}")?;
    Ok(problems)
}

fn storage_groups<Tz: TimeZone>(dir: &Path, tz: &Tz, out: &mut impl Write) -> Result<usize>
where
    Tz::Offset: Display,
{
    let mut sgs = match entries(dir) {
        Ok(v) => v,
        Err(e) => {
            writeln!(out, "|  |--error: {e}")?;
            return Ok(1);
        }
    };
    sgs.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut problems = 0;
    for (name, path, is_dir) in sgs {
        writeln!(out, "|  |--{name}")?;
        if !is_dir {
            continue;
        }
        let mut parts = match entries(&path) {
            Ok(v) => v,
            Err(e) => {
                writeln!(out, "|  |  |--error: {e}")?;
                problems += 1;
                continue;
            }
        };
        parts.sort_by_key(|p| partition_key(&p.0));
        for (pname, ppath, pdir) in parts {
            writeln!(out, "|  |  |--{pname}")?;
            if pdir {
                problems += partition(&ppath, tz, out)?;
            }
        }
    }
    Ok(problems)
}

fn partition<Tz: TimeZone>(dir: &Path, tz: &Tz, out: &mut impl Write) -> Result<usize>
where
    Tz::Offset: Display,
{
    let mut files = match entries(dir) {
        Ok(v) => v,
        Err(e) => {
            writeln!(out, "|  |  |  |--error: {e}")?;
            return Ok(1);
        }
    };
    files.sort_by_key(|f| file_key(&f.0));
    let names: std::collections::HashSet<&str> = files.iter().map(|f| f.0.as_str()).collect();
    let mut problems = 0;
    for (name, path, _) in &files {
        if name.ends_with(TSFILE_SUFFIX)
            && !names.contains(format!("{name}{RESOURCE_SUFFIX}").as_str())
        {
            writeln!(
                out,
                "|  |  |  |--{name} (no .resource: unsealed, or not closed cleanly)"
            )?;
            problems += 1;
            continue;
        }
        if name.ends_with(TSFILE_SUFFIX) {
            writeln!(out, "|  |  |  |--{name}{}", format_note(path))?;
        } else {
            writeln!(out, "|  |  |  |--{name}")?;
        }
        if !name.ends_with(".tsfile.resource") {
            continue;
        }
        let read = fs::read(path).map_err(Error::from).and_then(|b| {
            if ResourceV4::is_v4(&b) {
                // A table-model device id is shown as its segments joined with `.`.
                ResourceV4::deserialize(&b).map(|r| {
                    r.devices
                        .into_iter()
                        .map(|mut d| {
                            d.device = crate::file::v4::DeviceId::from_key(&d.device).path();
                            d
                        })
                        .collect::<Vec<_>>()
                })
            } else {
                TsFileResource::deserialize(&b).map(|r| r.devices)
            }
        });
        match read {
            Ok(devices) => {
                let mut devs: Vec<_> = devices.iter().collect();
                devs.sort_by(|a, b| a.device.as_bytes().cmp(b.device.as_bytes()));
                for d in devs {
                    writeln!(
                        out,
                        "|  |  |  |  |--{}",
                        device_line(&d.device, d.start_time, d.end_time, tz)
                    )?;
                }
            }
            Err(e) => {
                writeln!(out, "|  |  |  |  |--error: {e}")?;
                problems += 1;
            }
        }
    }
    Ok(problems)
}

/// ` (TsFile format 000002)` or ` (TsFile format v4)` after a TsFile's name, from its
/// head; nothing when the head is neither (e.g. a file still being written).
fn format_note(path: &Path) -> &'static str {
    use std::io::Read;
    let mut head = [0u8; 12];
    let n = fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    if crate::file::v4::is_v4(&head[..n]) {
        " (TsFile format v4)"
    } else if n == 12 && &head[..] == b"TsFile000002" {
        " (TsFile format 000002)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn resource(devs: &[(&str, i64, i64)]) -> TsFileResource {
        let mut r = TsFileResource::default();
        for &(d, s, e) in devs {
            r.record(d, s, e);
        }
        r.historical_versions = Some(vec![1]);
        r
    }

    #[test]
    fn overview_of_a_data_directory() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let p0 = data.join("sequence/root.sg1/0");
        let p10 = data.join("sequence/root.sg1/10");
        let p2 = data.join("sequence/root.sg1/2");
        let u0 = data.join("unsequence/root.sg1/0");
        for d in [&p0, &p10, &p2, &u0] {
            fs::create_dir_all(d).unwrap();
        }
        fs::create_dir_all(data.join("sequence/root.a")).unwrap();
        let write = |dir: &Path, name: &str, devs: &[(&str, i64, i64)]| {
            let ts = dir.join(name);
            fs::write(&ts, b"TsFile").unwrap();
            resource(devs).write_for(&ts).unwrap();
        };
        write(
            &p0,
            "1593302400000-10-0.tsfile",
            &[("root.sg1.d2", 5000, 6000), ("root.sg1.d1", 1000, 2000)],
        );
        write(&p0, "1593302400000-9-0.tsfile", &[("root.sg1.d1", 0, 999)]);
        fs::write(p0.join("1593302400000-9-0.tsfile.mods"), b"").unwrap();
        write(&p10, "1593302500000-11-0.tsfile", &[("root.sg1.d1", -1, 1)]);
        fs::write(p2.join("1593302600000-12-0.tsfile"), b"TsFile").unwrap(); // unsealed
        write(&u0, "1593302700000-13-0.tsfile", &[("root.sg1.d1", 10, 20)]);
        fs::write(u0.join("1593302800000-14-0.tsfile"), b"TsFile").unwrap();
        fs::write(u0.join("1593302800000-14-0.tsfile.resource"), [1, 2, 3]).unwrap();
        // A v4 TsFile with its IoTDB 2.x .resource (layout of IoTDB's serializeTo), and
        // a 000002 one.
        fs::write(u0.join("1593302900000-15-0-0.tsfile"), b"TsFile\x04\x00").unwrap();
        let mut v4 = vec![1u8, 3, 0, 0, 0, 1];
        v4.extend_from_slice(&30i64.to_be_bytes());
        v4.extend_from_slice(&40i64.to_be_bytes());
        v4.extend_from_slice(&[2, 16]);
        v4.extend_from_slice(b"root.sg1");
        v4.extend_from_slice(&[4, b'd', b'4', 0, 0, 0, 0]);
        v4.extend_from_slice(&i64::MIN.to_be_bytes());
        v4.extend_from_slice(&i64::MAX.to_be_bytes());
        v4.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0]);
        fs::write(u0.join("1593302900000-15-0-0.tsfile.resource"), v4).unwrap();
        fs::write(u0.join("1593303000000-16-0.tsfile"), b"TsFile000002\x00").unwrap();
        resource(&[("root.sg1.d5", 50, 60)])
            .write_for(&u0.join("1593303000000-16-0.tsfile"))
            .unwrap();

        let mut out = Vec::new();
        let problems = overview(
            &parse_dir_list(&format!("{},", data.display())),
            &Utc,
            &mut out,
        )
        .unwrap();
        let t = |ms: i64| super::super::resource_print::time_text(ms, &Utc);
        let want = [
            RULE.to_string(),
            format!("|{}", data.display()),
            "|--sequence".into(),
            "|  |--root.a".into(),
            "|  |--root.sg1".into(),
            "|  |  |--0".into(),
            "|  |  |  |--1593302400000-9-0.tsfile".into(),
            "|  |  |  |--1593302400000-9-0.tsfile.mods".into(),
            "|  |  |  |--1593302400000-9-0.tsfile.resource".into(),
            format!("|  |  |  |  |--device root.sg1.d1, start time {}, end time {}", t(0), t(999)),
            "|  |  |  |--1593302400000-10-0.tsfile".into(),
            "|  |  |  |--1593302400000-10-0.tsfile.resource".into(),
            format!("|  |  |  |  |--device root.sg1.d1, start time {}, end time {}", t(1000), t(2000)),
            format!("|  |  |  |  |--device root.sg1.d2, start time {}, end time {}", t(5000), t(6000)),
            "|  |  |--2".into(),
            "|  |  |  |--1593302600000-12-0.tsfile (no .resource: unsealed, or not closed cleanly)".into(),
            "|  |  |--10".into(),
            "|  |  |  |--1593302500000-11-0.tsfile".into(),
            "|  |  |  |--1593302500000-11-0.tsfile.resource".into(),
            format!("|  |  |  |  |--device root.sg1.d1, start time {}, end time {}", t(-1), t(1)),
            "|--unsequence".into(),
            "|  |--root.sg1".into(),
            "|  |  |--0".into(),
            "|  |  |  |--1593302700000-13-0.tsfile".into(),
            "|  |  |  |--1593302700000-13-0.tsfile.resource".into(),
            format!("|  |  |  |  |--device root.sg1.d1, start time {}, end time {}", t(10), t(20)),
            "|  |  |  |--1593302800000-14-0.tsfile".into(),
            "|  |  |  |--1593302800000-14-0.tsfile.resource".into(),
            "|  |  |  |  |--error: malformed TsFile at byte 0: expected device count (start times): 4 bytes, but only 3 remain".into(),
            "|  |  |  |--1593302900000-15-0-0.tsfile (TsFile format v4)".into(),
            "|  |  |  |--1593302900000-15-0-0.tsfile.resource".into(),
            format!("|  |  |  |  |--device root.sg1.d4, start time {}, end time {}", t(30), t(40)),
            "|  |  |  |--1593303000000-16-0.tsfile (TsFile format 000002)".into(),
            "|  |  |  |--1593303000000-16-0.tsfile.resource".into(),
            format!("|  |  |  |  |--device root.sg1.d5, start time {}, end time {}", t(50), t(60)),
            RULE.to_string(),
        ]
        .join("\n")
            + "\n";
        assert_eq!(String::from_utf8(out).unwrap(), want);
        assert_eq!(problems, 2);
    }

    #[test]
    fn several_dirs_and_missing_parts() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("a");
        let b = root.path().join("b");
        fs::create_dir_all(a.join("sequence")).unwrap();
        fs::create_dir_all(b.join("unsequence")).unwrap();
        let mut out = Vec::new();
        let n = overview(&[a.clone(), b.clone()], &Utc, &mut out).unwrap();
        assert_eq!(n, 2);
        let want = format!(
            "{RULE}\n|{}\n|--sequence\n|--unsequence (missing)\n{RULE}\n|{}\n|--sequence (missing)\n|--unsequence\n{RULE}\n",
            a.display(),
            b.display()
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
        let e = overview(&[root.path().join("nope")], &Utc, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("not an IoTDB data directory"), "{e}");
    }

    #[test]
    fn dir_lists() {
        assert_eq!(parse_dir_list("a,b,,c"), ["a", "b", "c"].map(PathBuf::from));
        assert!(parse_dir_list("").is_empty());
    }
}
