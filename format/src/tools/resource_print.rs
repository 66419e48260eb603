//! `tsfiled resource PATH...`: prints `.resource` files, modelled on IoTDB's
//! `TsFileResourcePrinter`.
//!
//! A PATH may be a `.resource` file, the TsFile it belongs to (its `<name>.resource` is
//! read), or a directory (every `*.tsfile.resource` in it, ordered by the creation
//! time in the file names). Per file:
//!
//! ```text
//! Analyzing /data/sequence/root.sg/0/1593302400000-1-0.tsfile ...
//!
//! device root.sg.d1, start time 1593302400000 (2020-06-28T08:00:00.000+08:00), end time 1593302999000 (2020-06-28T08:09:59.000+08:00)
//! historical versions [1]
//! mods file 1593302400000-1-0.tsfile.mods
//!
//! ```
//!
//! then `Analyzing the resource file[ folder] PATH finished.`. Devices are listed in
//! stored order. Times are epoch milliseconds, shown as ISO-8601 in the given time zone
//! (the CLI passes `chrono::Local`: `TZ`, else `/etc/localtime`).

use crate::errors::Result;
use crate::resource::{TsFileName, TsFileResource, RESOURCE_SUFFIX, TSFILE_SUFFIX};
use chrono::{TimeZone, Utc};
use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};

/// ISO-8601 text of an epoch-millisecond time in `tz`, e.g.
/// `2020-06-28T08:00:00.000+08:00`; `None` outside chrono's range (±262,000 years).
pub fn iso_millis<Tz: TimeZone>(ms: i64, tz: &Tz) -> Option<String>
where
    Tz::Offset: Display,
{
    let utc = Utc.timestamp_millis_opt(ms).single()?;
    Some(
        utc.with_timezone(tz)
            .format("%Y-%m-%dT%H:%M:%S%.3f%:z")
            .to_string(),
    )
}

/// `MS (ISO)`, or `MS (out of range)` for times chrono cannot show.
pub fn time_text<Tz: TimeZone>(ms: i64, tz: &Tz) -> String
where
    Tz::Offset: Display,
{
    match iso_millis(ms, tz) {
        Some(iso) => format!("{ms} ({iso})"),
        None => format!("{ms} (out of range)"),
    }
}

/// `device D, start time S (ISO), end time E (ISO)`: one device line.
pub fn device_line<Tz: TimeZone>(device: &str, start: i64, end: i64, tz: &Tz) -> String
where
    Tz::Offset: Display,
{
    format!(
        "device {device}, start time {}, end time {}",
        time_text(start, tz),
        time_text(end, tz)
    )
}

/// The `.resource` files a PATH argument stands for, and whether it was a directory.
pub fn resource_files(path: &Path) -> std::io::Result<(Vec<PathBuf>, bool)> {
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(".tsfile.resource"))
            })
            .collect();
        files.sort_by_key(|p| {
            let name = p
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_owned();
            let parsed = name
                .strip_suffix(RESOURCE_SUFFIX)
                .and_then(TsFileName::parse);
            // Unparsable names go last, by name.
            (parsed.is_none(), parsed, name)
        });
        return Ok((files, true));
    }
    let s = path.as_os_str().to_string_lossy();
    if s.ends_with(TSFILE_SUFFIX) {
        return Ok((vec![crate::resource::resource_path(path)], false));
    }
    Ok((vec![path.to_path_buf()], false))
}

/// Prints one `.resource` file.
pub fn print_resource<Tz: TimeZone>(
    resource_file: &Path,
    tz: &Tz,
    out: &mut impl Write,
) -> Result<()>
where
    Tz::Offset: Display,
{
    let r = TsFileResource::read(resource_file)?;
    let shown = resource_file.display().to_string();
    let tsfile = shown.strip_suffix(RESOURCE_SUFFIX).unwrap_or(&shown);
    writeln!(out, "Analyzing {tsfile} ...")?;
    writeln!(out)?;
    for d in &r.devices {
        writeln!(
            out,
            "{}",
            device_line(&d.device, d.start_time, d.end_time, tz)
        )?;
    }
    match &r.historical_versions {
        Some(v) => writeln!(out, "historical versions {v:?}")?,
        None => {
            let name = Path::new(tsfile)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("");
            match r.versions_or_from_name(name) {
                Some(v) => writeln!(out, "historical versions {v:?} (from the file name)")?,
                None => writeln!(out, "historical versions absent")?,
            }
        }
    }
    if let Some(m) = &r.mod_file {
        writeln!(out, "mods file {m}")?;
    }
    writeln!(out)?;
    Ok(())
}

/// Prints every PATH. A file that cannot be read or parsed is reported as
/// `error: FILE: REASON` and counted; the others are still printed. Returns the number
/// of failed files. Only errors writing to `out` abort.
pub fn print_paths<Tz: TimeZone>(paths: &[PathBuf], tz: &Tz, out: &mut impl Write) -> Result<usize>
where
    Tz::Offset: Display,
{
    let mut failed = 0;
    for path in paths {
        let (files, is_dir) = match resource_files(path) {
            Ok(x) => x,
            Err(e) => {
                writeln!(out, "error: {}: {e}", path.display())?;
                failed += 1;
                continue;
            }
        };
        for f in &files {
            let mut buf = Vec::new();
            match print_resource(f, tz, &mut buf) {
                Ok(()) => out.write_all(&buf)?,
                Err(e) => {
                    writeln!(out, "error: {}: {e}", f.display())?;
                    failed += 1;
                }
            }
        }
        let what = if is_dir {
            "resource file folder"
        } else {
            "resource file"
        };
        writeln!(out, "Analyzing the {what} {} finished.", path.display())?;
    }
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;

    fn cst() -> FixedOffset {
        FixedOffset::east_opt(8 * 3600).unwrap()
    }

    #[test]
    fn iso_times() {
        assert_eq!(
            iso_millis(1593302400000, &cst()).unwrap(),
            "2020-06-28T08:00:00.000+08:00"
        );
        assert_eq!(
            iso_millis(-1, &Utc).unwrap(),
            "1969-12-31T23:59:59.999+00:00"
        );
        assert_eq!(iso_millis(i64::MAX, &Utc), None);
        assert_eq!(
            time_text(i64::MIN, &Utc),
            "-9223372036854775808 (out of range)"
        );
    }

    #[test]
    fn prints_files_directories_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = TsFileResource::default();
        a.record("root.sg.d2", 1593302400000, 1593302999000);
        a.record("root.sg.d1", 1593302400123, 1593302400123);
        a.historical_versions = Some(vec![2]);
        a.mod_file = Some("1593302500000-2-0.tsfile.mods".into());
        let mut b = TsFileResource::default();
        b.record("root.sg.d1", 0, 1000);
        let ta = dir.path().join("1593302500000-2-0.tsfile");
        let tb = dir.path().join("1593302400000-1-0.tsfile");
        a.write_for(&ta).unwrap();
        b.write_for(&tb).unwrap();
        std::fs::write(dir.path().join("999-9-0.tsfile.resource"), [0, 0, 0, 5]).unwrap();
        std::fs::write(dir.path().join("other.txt"), "x").unwrap();

        let mut out = Vec::new();
        let failed =
            print_paths(&[dir.path().to_path_buf(), ta.clone()], &cst(), &mut out).unwrap();
        assert_eq!(failed, 1);
        let d = dir.path().display();
        let want = format!(
            "error: {d}/999-9-0.tsfile.resource: malformed TsFile at byte 0: expected device count (start times): 5 entries need at least 60 bytes, but only 0 remain\n\
             Analyzing {d}/1593302400000-1-0.tsfile ...\n\
             \n\
             device root.sg.d1, start time 0 (1970-01-01T08:00:00.000+08:00), end time 1000 (1970-01-01T08:00:01.000+08:00)\n\
             historical versions [1] (from the file name)\n\
             \n\
             Analyzing {d}/1593302500000-2-0.tsfile ...\n\
             \n\
             device root.sg.d2, start time 1593302400000 (2020-06-28T08:00:00.000+08:00), end time 1593302999000 (2020-06-28T08:09:59.000+08:00)\n\
             device root.sg.d1, start time 1593302400123 (2020-06-28T08:00:00.123+08:00), end time 1593302400123 (2020-06-28T08:00:00.123+08:00)\n\
             historical versions [2]\n\
             mods file 1593302500000-2-0.tsfile.mods\n\
             \n\
             Analyzing the resource file folder {d} finished.\n\
             Analyzing {d}/1593302500000-2-0.tsfile ...\n\
             \n\
             device root.sg.d2, start time 1593302400000 (2020-06-28T08:00:00.000+08:00), end time 1593302999000 (2020-06-28T08:09:59.000+08:00)\n\
             device root.sg.d1, start time 1593302400123 (2020-06-28T08:00:00.123+08:00), end time 1593302400123 (2020-06-28T08:00:00.123+08:00)\n\
             historical versions [2]\n\
             mods file 1593302500000-2-0.tsfile.mods\n\
             \n\
             Analyzing the resource file {}/1593302500000-2-0.tsfile finished.\n",
            d
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn missing_file_is_reported() {
        let mut out = Vec::new();
        let n = print_paths(&[PathBuf::from("/nonexistent/x.resource")], &Utc, &mut out).unwrap();
        assert_eq!(n, 1);
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.starts_with("error: /nonexistent/x.resource: I/O error"),
            "{s}"
        );
    }
}
