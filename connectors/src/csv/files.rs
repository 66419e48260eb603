//! Moving finished files: same-filesystem renames, a copy fallback across filesystems that
//! never deletes a source whose copy failed, and unique destination names.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use tsfiled_fsio::{write_atomic, Fs, StdFs};

fn sync_dir(dir: &Path) -> io::Result<()> {
    StdFs.sync_dir(dir)
}

/// A name in `dir` that does not exist yet: `name`, else `name.1`, `name.2`, ...
pub fn unique_name(dir: &Path, name: &str) -> PathBuf {
    let first = dir.join(name);
    if !exists(&first) {
        return first;
    }
    (1u64..)
        .map(|i| dir.join(format!("{name}.{i}")))
        .find(|p| !exists(p))
        .unwrap_or(first)
}

fn exists(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok()
}

/// Moves `src` to `dest` durably: `rename(2)` and fsyncs of both directories. Across
/// filesystems (`EXDEV`) it copies to `dest.tmp`, fsyncs, renames into place, fsyncs the
/// directory and only then removes the source; if any step before the removal fails the
/// source is left alone.
pub fn move_file(src: &Path, dest: &Path) -> io::Result<()> {
    let dest_dir = dest.parent().unwrap_or(Path::new("."));
    let src_dir = src.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dest_dir)?;
    match fs::rename(src, dest) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(18) => {
            // EXDEV: copy, make it durable, then remove the source.
            let mut tmp = dest.as_os_str().to_owned();
            tmp.push(".tmp");
            let tmp = PathBuf::from(tmp);
            let copied = (|| {
                fs::copy(src, &tmp)?;
                File::open(&tmp)?.sync_all()?;
                fs::rename(&tmp, dest)
            })();
            if let Err(e) = copied {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
            sync_dir(dest_dir)?;
            fs::remove_file(src)?;
        }
        Err(e) => return Err(e),
    }
    sync_dir(dest_dir)?;
    if src_dir != dest_dir {
        sync_dir(src_dir)?;
    }
    Ok(())
}

/// Deletes `src` durably.
pub fn delete_file(src: &Path) -> io::Result<()> {
    fs::remove_file(src)?;
    sync_dir(src.parent().unwrap_or(Path::new(".")))
}

/// Writes a report next to where a file goes (`<dest>.report`).
pub fn write_report(dest: &Path, report: &[u8]) -> io::Result<PathBuf> {
    let mut p = dest.as_os_str().to_owned();
    p.push(".report");
    let p = PathBuf::from(p);
    if let Some(d) = p.parent() {
        fs::create_dir_all(d)?;
    }
    write_atomic(&StdFs, &p, report)?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_with_unique_names() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.csv");
        let done = d.path().join("done");
        fs::write(&a, b"1").unwrap();
        let dest = unique_name(&done, "a.csv");
        move_file(&a, &dest).unwrap();
        assert!(!a.exists());
        assert_eq!(fs::read(done.join("a.csv")).unwrap(), b"1");
        fs::write(&a, b"2").unwrap();
        let dest = unique_name(&done, "a.csv");
        assert_eq!(dest, done.join("a.csv.1"));
        move_file(&a, &dest).unwrap();
        assert_eq!(fs::read(done.join("a.csv.1")).unwrap(), b"2");
        let r = write_report(&dest, b"line 2: x").unwrap();
        assert_eq!(r, done.join("a.csv.1.report"));
        // A failed move leaves the source in place.
        fs::write(&a, b"3").unwrap();
        assert!(move_file(&a, &d.path().join("no/such\0dir/a")).is_err());
        assert!(a.exists());
    }
}
