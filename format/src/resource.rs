//! IoTDB 0.10 `.resource` files (spec §9.2) and the data-directory file naming (§9.3).
//!
//! A `.resource` file sits next to each sealed TsFile (`<tsfile>.resource`) and lists, per
//! device, the smallest and largest timestamp in the file, then (optionally) the file's
//! historical versions and (optionally) the name of its `.mods` deletion file:
//!
//! ```text
//! i32 n, n × (String device, i64 start)     start times
//! i32 n, n × (String device, i64 end)       end times, same devices in the same order
//! [i32 h, h × i64 version]                  present iff bytes remain
//! [String mods file name]                   present iff bytes remain
//! ```
//!
//! IoTDB writes `<tsfile>.resource.temp` and renames it; [`TsFileResource::write_for`]
//! does the same with fsyncs ([`write_atomic`]).
//!
//! The `.resource` of a TsFile v4 (IoTDB 2.x) is [`ResourceV4`].

use crate::errors::{Error, Result};
use crate::util::io::{self, ByteReader};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Suffix of a resource file (appended to the TsFile's name).
pub const RESOURCE_SUFFIX: &str = ".resource";
/// Suffix of the temporary file a resource is first written to.
pub const TEMP_SUFFIX: &str = ".temp";
/// Suffix of a modification (deletion) file (appended to the TsFile's name).
pub const MODS_SUFFIX: &str = ".mods";
/// Suffix of a TsFile.
pub const TSFILE_SUFFIX: &str = ".tsfile";

/// One device's time range inside a TsFile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceTimeRange {
    /// Device id, e.g. `root.sg1.d1`; in a v4 `.resource` a table-model device is written
    /// and read as its [`DeviceId::key`](crate::file::v4::DeviceId::key).
    pub device: String,
    /// Smallest timestamp of the device in the file.
    pub start_time: i64,
    /// Largest timestamp of the device in the file.
    pub end_time: i64,
}

/// The content of a `.resource` file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TsFileResource {
    /// Device time ranges, in stored order.
    pub devices: Vec<DeviceTimeRange>,
    /// The historical versions block, if the file has one (normal for 0.10 servers:
    /// a flushed file holds just its own version). IoTDB falls back to the version in
    /// the file name when it is absent, see [`TsFileResource::versions_or_from_name`].
    pub historical_versions: Option<Vec<i64>>,
    /// Bare file name of the `.mods` file, relative to the TsFile's directory.
    pub mod_file: Option<String>,
}

/// Smallest serialized device entry: an empty name (4 bytes) and a time (8 bytes).
const MIN_ENTRY: usize = 12;

fn java_len(n: usize, what: &str) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::invalid(format_args!("{what}: {n} exceeds i32::MAX")))
}

impl TsFileResource {
    /// Adds `[start, end]` to `device`'s range (creating the entry at the end if new).
    /// Linear in the number of devices.
    pub fn record(&mut self, device: &str, start: i64, end: i64) {
        match self.devices.iter_mut().find(|d| d.device == device) {
            Some(d) => {
                d.start_time = d.start_time.min(start);
                d.end_time = d.end_time.max(end);
            }
            None => self.devices.push(DeviceTimeRange {
                device: device.to_owned(),
                start_time: start,
                end_time: end,
            }),
        }
    }

    /// Appends the serialized form (both device lists in the same order, then the
    /// optional parts that are set). A `mod_file` without `historical_versions` cannot
    /// be represented (the reader would take the name for a version count) and is an
    /// error, as are counts or names longer than `i32::MAX`.
    pub fn serialize(&self, out: &mut Vec<u8>) -> Result<()> {
        // Validate first so that an error leaves `out` untouched.
        let n = java_len(self.devices.len(), "device count")?;
        for d in &self.devices {
            java_len(d.device.len(), "device name length")?;
        }
        if let Some(v) = &self.historical_versions {
            java_len(v.len(), "historical version count")?;
        }
        if let Some(m) = &self.mod_file {
            java_len(m.len(), "mods file name length")?;
            if self.historical_versions.is_none() {
                return Err(Error::invalid(
                    "a .resource with a mods file name must also have historical versions",
                ));
            }
        }
        io::put_i32(out, n);
        for d in &self.devices {
            io::put_binary(out, d.device.as_bytes());
            io::put_i64(out, d.start_time);
        }
        io::put_i32(out, n);
        for d in &self.devices {
            io::put_binary(out, d.device.as_bytes());
            io::put_i64(out, d.end_time);
        }
        if let Some(v) = &self.historical_versions {
            io::put_i32(out, v.len() as i32);
            for &x in v {
                io::put_i64(out, x);
            }
            if let Some(m) = &self.mod_file {
                io::put_binary(out, m.as_bytes());
            }
        }
        Ok(())
    }

    /// The serialized bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(16 + self.devices.len() * 48);
        self.serialize(&mut out)?;
        Ok(out)
    }

    /// Parses a whole `.resource` file. The optional parts are read only if bytes
    /// remain, as IoTDB does; bytes left after the mods file name are an error. Errors
    /// name the byte offset.
    pub fn deserialize(buf: &[u8]) -> Result<Self> {
        let mut r = ByteReader::new(buf, 0);
        let n = read_count(&mut r, "device count (start times)", MIN_ENTRY)?;
        let mut devices = Vec::with_capacity(n);
        for _ in 0..n {
            let device = r.read_string("device id (start times)")?;
            let start_time = r.read_i64("start time")?;
            devices.push(DeviceTimeRange {
                device,
                start_time,
                end_time: i64::MIN,
            });
        }
        let at = r.offset();
        let n2 = read_count(&mut r, "device count (end times)", MIN_ENTRY)?;
        if n2 != n {
            return Err(Error::format(
                at,
                format_args!("end-time device count equal to the start-time count {n}, found {n2}"),
            ));
        }
        // IoTDB matches end times to devices by position and ignores these names.
        for d in devices.iter_mut() {
            r.read_binary("device id (end times)")?;
            d.end_time = r.read_i64("end time")?;
        }
        let historical_versions = if r.is_empty() {
            None
        } else {
            let h = read_count(&mut r, "historical version count", 8)?;
            let mut v = Vec::with_capacity(h);
            for _ in 0..h {
                v.push(r.read_i64("historical version")?);
            }
            Some(v)
        };
        let mod_file = if r.is_empty() {
            None
        } else {
            Some(r.read_string("mods file name")?)
        };
        if !r.is_empty() {
            return Err(r.error(format_args!(
                "end of the .resource file, found {} more bytes",
                r.remaining()
            )));
        }
        Ok(TsFileResource {
            devices,
            historical_versions,
            mod_file,
        })
    }

    /// Reads and parses a `.resource` file.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = fs::read(path)?;
        Self::deserialize(&bytes)
    }

    /// Writes `<tsfile>.resource` for the TsFile at `tsfile` the IoTDB way (temp file,
    /// then rename) with fsyncs ([`write_atomic`]). Returns the resource path.
    pub fn write_for(&self, tsfile: &Path) -> Result<PathBuf> {
        let path = resource_path(tsfile);
        write_atomic(&path, &self.to_bytes()?)?;
        Ok(path)
    }

    /// The historical versions, or (like IoTDB for files without the block) the
    /// version in the TsFile's name as the only one.
    pub fn versions_or_from_name(&self, tsfile_name: &str) -> Option<Vec<i64>> {
        match &self.historical_versions {
            Some(v) => Some(v.clone()),
            None => TsFileName::parse(tsfile_name).map(|n| vec![n.version]),
        }
    }
}

/// Reads an i32 count whose entries take at least `min_entry` bytes each, checked
/// against the remaining bytes before anything is allocated.
fn read_count(r: &mut ByteReader<'_>, what: &str, min_entry: usize) -> Result<usize> {
    let at = r.offset();
    let n = r.read_i32(what)?;
    if n < 0 {
        return Err(Error::format(
            at,
            format_args!("{what}: a count >= 0, found {n}"),
        ));
    }
    let n = n as usize;
    if n.saturating_mul(min_entry) > r.remaining() {
        return Err(Error::format(
            at,
            format_args!(
                "{what}: {n} entries need at least {} bytes, but only {} remain",
                n.saturating_mul(min_entry),
                r.remaining()
            ),
        ));
    }
    Ok(n)
}

/// `<tsfile>.resource`.
pub fn resource_path(tsfile: &Path) -> PathBuf {
    let mut s = tsfile.as_os_str().to_owned();
    s.push(RESOURCE_SUFFIX);
    PathBuf::from(s)
}

/// Writes `bytes` to `path` crash-safely: write `<path>.temp`, fsync it, rename it over
/// `path`, fsync the directory. A crash leaves either the old file or the new one (and
/// possibly a stale `.temp`, which IoTDB also tolerates).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(TEMP_SUFFIX);
    let tmp = PathBuf::from(tmp);
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    sync_parent_dir(path)
}

/// fsyncs the directory containing `path` (makes a rename or create durable).
pub fn sync_parent_dir(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    fs::File::open(dir)?.sync_all()
}

/// The parts of an IoTDB TsFile name `<createTimeMillis>-<version>-<mergeCount>.tsfile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TsFileName {
    /// Wall-clock creation time in milliseconds.
    pub create_time: i64,
    /// Per storage group version number.
    pub version: i64,
    /// Merge count (0 for flushed files).
    pub merge_count: i64,
}

impl TsFileName {
    /// Parses a file name (not a path); `None` if it does not follow the pattern.
    pub fn parse(name: &str) -> Option<Self> {
        let stem = name.strip_suffix(TSFILE_SUFFIX)?;
        let mut it = stem.split('-');
        let create_time = it.next()?.parse().ok()?;
        let version = it.next()?.parse().ok()?;
        let merge_count = it.next()?.parse().ok()?;
        if it.next().is_some() {
            return None;
        }
        Some(TsFileName {
            create_time,
            version,
            merge_count,
        })
    }

    /// The file name, `<createTimeMillis>-<version>-<mergeCount>.tsfile`.
    pub fn file_name(&self) -> String {
        format!(
            "{}-{}-{}{TSFILE_SUFFIX}",
            self.create_time, self.version, self.merge_count
        )
    }
}

/// The `.resource` of a TsFile v4 as IoTDB 2.x writes it (`TsFileResource.serializeTo`
/// with an `ArrayDeviceTimeIndex`), integers big-endian:
///
/// ```text
/// u8 1                          resource version
/// u8 3                          time index type: array device time index
/// i32 n, n × (i64 start, i64 end)   time ranges, by device index
/// n × (device id, i32 index)    device id as in the TsFile (var-int segment count, each
///                               segment a zigzag var-int length and UTF-8)
/// i64 max plan index, i64 min plan index
/// i32 -1                        no mods file; else its path (i32 length, UTF-8), i64 offset
/// ...                           progress index block(s), not read here
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceV4 {
    /// Device time ranges, by device index.
    pub devices: Vec<DeviceTimeRange>,
    /// Largest plan index (`i64::MIN`: none).
    pub max_plan_index: i64,
    /// Smallest plan index (`i64::MAX`: none).
    pub min_plan_index: i64,
    /// The shared mods file's path and offset, if any.
    pub mod_file: Option<(String, i64)>,
}

/// `TsFileResource.VERSION_NUMBER` of IoTDB 2.x.
const RESOURCE_V4_VERSION: u8 = 1;
/// `ITimeIndex.ARRAY_DEVICE_TIME_INDEX_TYPE`.
const ARRAY_DEVICE_TIME_INDEX: u8 = 3;
/// `TsFileResourceBlockType.EMPTY_BLOCK`.
const EMPTY_BLOCK: u8 = 0;

impl ResourceV4 {
    /// Whether `buf` starts as an IoTDB 2.x `.resource` (version 1, array device time
    /// index). A 0.10 `.resource` starts with a big-endian device count, whose first
    /// byte is 0 below 2^24 devices.
    pub fn is_v4(buf: &[u8]) -> bool {
        buf.len() >= 2 && buf[0] == RESOURCE_V4_VERSION && buf[1] == ARRAY_DEVICE_TIME_INDEX
    }

    /// The `.resource` of a file written outside IoTDB: no operation index range (plan
    /// indexes `i64::MIN` / `i64::MAX`, TsFileResource's initial values), no mods file.
    pub fn without_plan_index(devices: Vec<DeviceTimeRange>) -> Self {
        ResourceV4 {
            devices,
            max_plan_index: i64::MIN,
            min_plan_index: i64::MAX,
            mod_file: None,
        }
    }

    /// Serializes as IoTDB 2.x does, the mirror of [`ResourceV4::deserialize`], ending with
    /// an empty block (`TsFileResourceBlockType.EMPTY_BLOCK`: no progress index).
    pub fn serialize(&self, out: &mut Vec<u8>) {
        out.push(RESOURCE_V4_VERSION);
        out.push(ARRAY_DEVICE_TIME_INDEX);
        io::put_i32(out, self.devices.len() as i32);
        for d in &self.devices {
            io::put_i64(out, d.start_time);
            io::put_i64(out, d.end_time);
        }
        for (i, d) in self.devices.iter().enumerate() {
            crate::file::v4::DeviceId::from_key(&d.device).serialize(out);
            io::put_i32(out, i as i32);
        }
        io::put_i64(out, self.max_plan_index);
        io::put_i64(out, self.min_plan_index);
        match &self.mod_file {
            None => io::put_i32(out, -1),
            Some((path, offset)) => {
                io::put_i32(out, path.len() as i32);
                out.extend_from_slice(path.as_bytes());
                io::put_i64(out, *offset);
            }
        }
        out.push(EMPTY_BLOCK);
    }

    /// Parses an IoTDB 2.x `.resource` up to the mods file (what follows is not read).
    /// Errors name the byte offset.
    pub fn deserialize(buf: &[u8]) -> Result<Self> {
        let mut r = ByteReader::new(buf, 0);
        let version = r.read_u8("resource version")?;
        let kind = r.read_u8("time index type")?;
        if version != RESOURCE_V4_VERSION || kind != ARRAY_DEVICE_TIME_INDEX {
            return Err(Error::format(
                0,
                format_args!(
                    "an IoTDB 2.x .resource (version 1, time index type 3), found version {version}, type {kind}"
                ),
            ));
        }
        let n = read_count(&mut r, "device count", 16)?;
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            times.push((r.read_i64("start time")?, r.read_i64("end time")?));
        }
        let mut devices: Vec<Option<DeviceTimeRange>> = vec![None; n];
        for _ in 0..n {
            let at = r.offset();
            let id = crate::file::v4::DeviceId::deserialize(&mut r)?;
            let i = r.read_i32("device index")?;
            let slot = usize::try_from(i).ok().filter(|i| *i < n).ok_or_else(|| {
                Error::format(at, format_args!("a device index below {n}, found {i}"))
            })?;
            if devices[slot].is_some() {
                return Err(Error::format(
                    at,
                    format_args!("one device per index, index {i} twice"),
                ));
            }
            devices[slot] = Some(DeviceTimeRange {
                device: id.key(),
                start_time: times[slot].0,
                end_time: times[slot].1,
            });
        }
        let max_plan_index = r.read_i64("max plan index")?;
        let min_plan_index = r.read_i64("min plan index")?;
        let mod_file = if r.is_empty() {
            None
        } else {
            let at = r.offset();
            let len = r.read_i32("mods file path length")?;
            if len == -1 {
                None
            } else if len < 0 || len as usize > r.remaining() {
                return Err(Error::format(
                    at,
                    format_args!("a mods file path length, found {len}"),
                ));
            } else {
                let path = String::from_utf8(r.take(len as usize, "mods file path")?.to_vec())
                    .map_err(|_| Error::format(at, "a UTF-8 mods file path"))?;
                Some((path, r.read_i64("mods file offset")?))
            }
        };
        Ok(ResourceV4 {
            devices: devices
                .into_iter()
                .map(|d| d.expect("every index set"))
                .collect(),
            max_plan_index,
            min_plan_index,
            mod_file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TsFileResource {
        let mut r = TsFileResource::default();
        r.record("root.sg.d1", 100, 200);
        r.record("root.sg.设备", -5, 7);
        r.record("root.sg.d1", 50, 150);
        r.historical_versions = Some(vec![3, 1]);
        r.mod_file = Some("1593000000000-3-0.tsfile.mods".into());
        r
    }

    #[test]
    fn exact_bytes_of_a_minimal_resource() {
        let r = TsFileResource {
            devices: vec![DeviceTimeRange {
                device: "d".into(),
                start_time: 1,
                end_time: 2,
            }],
            historical_versions: Some(vec![7]),
            mod_file: None,
        };
        let want: Vec<u8> = [
            &[0, 0, 0, 1][..],
            &[0, 0, 0, 1, b'd'],
            &[0, 0, 0, 0, 0, 0, 0, 1],
            &[0, 0, 0, 1],
            &[0, 0, 0, 1, b'd'],
            &[0, 0, 0, 0, 0, 0, 0, 2],
            &[0, 0, 0, 1],
            &[0, 0, 0, 0, 0, 0, 0, 7],
        ]
        .concat();
        assert_eq!(r.to_bytes().unwrap(), want);
        assert_eq!(TsFileResource::deserialize(&want).unwrap(), r);
    }

    #[test]
    fn record_merges_ranges() {
        let r = sample();
        assert_eq!(r.devices.len(), 2);
        assert_eq!((r.devices[0].start_time, r.devices[0].end_time), (50, 200));
        assert_eq!(r.devices[1].device, "root.sg.设备");
    }

    #[test]
    fn round_trips_with_and_without_optional_parts() {
        let full = sample();
        let mut no_mods = full.clone();
        no_mods.mod_file = None;
        let mut bare = no_mods.clone();
        bare.historical_versions = None;
        let empty = TsFileResource::default();
        let empty_versions = TsFileResource {
            historical_versions: Some(vec![]),
            ..Default::default()
        };
        for r in [full, no_mods, bare, empty, empty_versions] {
            let b = r.to_bytes().unwrap();
            assert_eq!(TsFileResource::deserialize(&b).unwrap(), r);
        }
        assert_eq!(TsFileResource::default().to_bytes().unwrap(), [0; 8]);
    }

    #[test]
    fn mods_without_versions_is_refused() {
        let mut r = sample();
        r.historical_versions = None;
        assert!(r.to_bytes().is_err());
    }

    #[test]
    fn every_truncation_is_an_error_or_a_shorter_valid_resource() {
        let full = sample();
        let bytes = full.to_bytes().unwrap();
        let mut no_mods = full.clone();
        no_mods.mod_file = None;
        let mut bare = no_mods.clone();
        bare.historical_versions = None;
        let bare_len = bare.to_bytes().unwrap().len();
        let no_mods_len = no_mods.to_bytes().unwrap().len();
        for len in 0..bytes.len() {
            let got = TsFileResource::deserialize(&bytes[..len]);
            if len == bare_len {
                assert_eq!(got.unwrap(), bare);
            } else if len == no_mods_len {
                assert_eq!(got.unwrap(), no_mods);
            } else {
                let e = got.unwrap_err().to_string();
                assert!(e.contains("at byte"), "{len}: {e}");
            }
        }
        assert_eq!(TsFileResource::deserialize(&bytes).unwrap(), full);
    }

    #[test]
    fn malformed_inputs_name_offsets() {
        // Negative device count.
        let e = TsFileResource::deserialize(&[0xff, 0xff, 0xff, 0xff]).unwrap_err();
        assert!(
            e.to_string().contains("byte 0") && e.to_string().contains("-1"),
            "{e}"
        );
        // A huge count is rejected before any allocation.
        let e = TsFileResource::deserialize(&[0x7f, 0xff, 0xff, 0xff, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("only 2 remain"), "{e}");
        // End-time count differs.
        let mut b = Vec::new();
        io::put_i32(&mut b, 1);
        io::put_binary(&mut b, b"d");
        io::put_i64(&mut b, 1);
        io::put_i32(&mut b, 2);
        b.extend_from_slice(&[0; 24]);
        let e = TsFileResource::deserialize(&b).unwrap_err().to_string();
        assert!(e.contains("byte 17") && e.contains("found 2"), "{e}");
        // Trailing bytes after the mods name.
        let mut b = sample().to_bytes().unwrap();
        let len = b.len();
        b.push(0);
        let e = TsFileResource::deserialize(&b).unwrap_err().to_string();
        assert!(e.contains(&format!("byte {len}")), "{e}");
        // Invalid UTF-8 device name.
        let mut b = Vec::new();
        io::put_i32(&mut b, 1);
        io::put_binary(&mut b, &[0xff]);
        b.extend_from_slice(&[0; 8]);
        let e = TsFileResource::deserialize(&b).unwrap_err().to_string();
        assert!(e.contains("byte 4") && e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn versions_fall_back_to_the_file_name() {
        let mut r = sample();
        assert_eq!(r.versions_or_from_name("1-9-0.tsfile"), Some(vec![3, 1]));
        r.historical_versions = None;
        assert_eq!(
            r.versions_or_from_name("1593000000000-9-0.tsfile"),
            Some(vec![9])
        );
        assert_eq!(r.versions_or_from_name("garbage"), None);
    }

    #[test]
    fn file_names() {
        let n = TsFileName::parse("1593000000000-12-3.tsfile").unwrap();
        assert_eq!(
            (n.create_time, n.version, n.merge_count),
            (1593000000000, 12, 3)
        );
        assert_eq!(n.file_name(), "1593000000000-12-3.tsfile");
        for bad in [
            "1-2.tsfile",
            "1-2-3-4.tsfile",
            "a-2-3.tsfile",
            "1-2-3.resource",
            "",
        ] {
            assert_eq!(TsFileName::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn write_for_is_atomic_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let tsfile = dir.path().join("1593000000000-3-0.tsfile");
        let r = sample();
        let path = r.write_for(&tsfile).unwrap();
        assert_eq!(path, dir.path().join("1593000000000-3-0.tsfile.resource"));
        assert_eq!(TsFileResource::read(&path).unwrap(), r);
        // Overwrite in place.
        let mut r2 = r.clone();
        r2.record("root.sg.d9", 1, 1);
        r2.write_for(&tsfile).unwrap();
        assert_eq!(TsFileResource::read(&path).unwrap(), r2);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["1593000000000-3-0.tsfile.resource"]);
    }

    proptest::proptest! {
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = TsFileResource::deserialize(&b);
        }

        #[test]
        fn random_resources_round_trip(
            devs in proptest::collection::vec(("\\PC{0,12}", proptest::num::i64::ANY, proptest::num::i64::ANY), 0..8),
            versions in proptest::option::of(proptest::collection::vec(proptest::num::i64::ANY, 0..5)),
            mods in proptest::option::of("[a-z0-9.-]{0,20}"),
        ) {
            let r = TsFileResource {
                devices: devs.into_iter().map(|(device, start_time, end_time)| DeviceTimeRange { device, start_time, end_time }).collect(),
                mod_file: if versions.is_some() { mods } else { None },
                historical_versions: versions,
            };
            let b = r.to_bytes().unwrap();
            proptest::prop_assert_eq!(TsFileResource::deserialize(&b).unwrap(), r);
        }
    }
}
