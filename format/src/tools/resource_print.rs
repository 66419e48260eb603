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
use crate::resource::{ResourceV4, TsFileName, TsFileResource, RESOURCE_SUFFIX, TSFILE_SUFFIX};
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
    let bytes = std::fs::read(resource_file)?;
    let shown = resource_file.display().to_string();
    let tsfile = shown.strip_suffix(RESOURCE_SUFFIX).unwrap_or(&shown);
    if ResourceV4::is_v4(&bytes) {
        let r = ResourceV4::deserialize(&bytes)?;
        writeln!(out, "Analyzing {tsfile} ...")?;
        writeln!(out, "(IoTDB 2.x .resource, TsFile format v4)")?;
        writeln!(out)?;
        for d in &r.devices {
            // A table-model device id is shown as its segments joined with `.`.
            let device = crate::file::v4::DeviceId::from_key(&d.device).path();
            writeln!(
                out,
                "{}",
                device_line(&device, d.start_time, d.end_time, tz)
            )?;
        }
        if let Some((m, off)) = &r.mod_file {
            writeln!(out, "mods file {m} at offset {off}")?;
        }
        writeln!(out)?;
        return Ok(());
    }
    let r = TsFileResource::deserialize(&bytes)?;
    writeln!(out, "Analyzing {tsfile} ...")?;
    writeln!(out, "(IoTDB 0.10 .resource, TsFile format 000002)")?;
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
             (IoTDB 0.10 .resource, TsFile format 000002)\n\
             \n\
             device root.sg.d1, start time 0 (1970-01-01T08:00:00.000+08:00), end time 1000 (1970-01-01T08:00:01.000+08:00)\n\
             historical versions [1] (from the file name)\n\
             \n\
             Analyzing {d}/1593302500000-2-0.tsfile ...\n\
             (IoTDB 0.10 .resource, TsFile format 000002)\n\
             \n\
             device root.sg.d2, start time 1593302400000 (2020-06-28T08:00:00.000+08:00), end time 1593302999000 (2020-06-28T08:09:59.000+08:00)\n\
             device root.sg.d1, start time 1593302400123 (2020-06-28T08:00:00.123+08:00), end time 1593302400123 (2020-06-28T08:00:00.123+08:00)\n\
             historical versions [2]\n\
             mods file 1593302500000-2-0.tsfile.mods\n\
             \n\
             Analyzing the resource file folder {d} finished.\n\
             Analyzing {d}/1593302500000-2-0.tsfile ...\n\
             (IoTDB 0.10 .resource, TsFile format 000002)\n\
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

    /// An IoTDB 2.x `.resource` built byte by byte from the layout of IoTDB's
    /// `TsFileResource.serializeTo` (`ArrayDeviceTimeIndex`, `StringArrayDeviceID`).
    #[test]
    fn prints_an_iotdb_2_resource() {
        let mut b: Vec<u8> = vec![1, 3, 0, 0, 0, 2];
        for t in [1593302400000i64, 1593302999000, -5, 7] {
            b.extend_from_slice(&t.to_be_bytes());
        }
        // index 1 first: root.a.b.c.d = "root.a.b" (zigzag 16), "c", "d"
        b.extend_from_slice(&[3, 16]);
        b.extend_from_slice(b"root.a.b");
        b.extend_from_slice(&[2, b'c', 2, b'd', 0, 0, 0, 1]);
        // root.sg.d1 = "root.sg" (zigzag 14), "d1" (zigzag 4), index 0
        b.extend_from_slice(&[2, 14]);
        b.extend_from_slice(b"root.sg");
        b.extend_from_slice(&[4, b'd', b'1', 0, 0, 0, 0]);
        b.extend_from_slice(&i64::MIN.to_be_bytes());
        b.extend_from_slice(&i64::MAX.to_be_bytes());
        b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0]);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("1593302999000-1-0-0.tsfile.resource");
        std::fs::write(&f, &b).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            print_paths(std::slice::from_ref(&f), &cst(), &mut out).unwrap(),
            0
        );
        let d = dir.path().display();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "Analyzing {d}/1593302999000-1-0-0.tsfile ...\n\
                 (IoTDB 2.x .resource, TsFile format v4)\n\
                 \n\
                 device root.sg.d1, start time 1593302400000 (2020-06-28T08:00:00.000+08:00), end time 1593302999000 (2020-06-28T08:09:59.000+08:00)\n\
                 device root.a.b.c.d, start time -5 (1970-01-01T07:59:59.995+08:00), end time 7 (1970-01-01T08:00:00.007+08:00)\n\
                 \n\
                 Analyzing the resource file {d}/1593302999000-1-0-0.tsfile.resource finished.\n"
            )
        );
        // every truncation is an error, never a panic
        for cut in 0..b.len() - 5 {
            assert!(ResourceV4::deserialize(&b[..cut]).is_err(), "cut at {cut}");
        }
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
