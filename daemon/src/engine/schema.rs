//! Series schemas: path validation, storage groups, schema rules, typing on first
//! sight, and the registry that freezes a series' type once it is known.
//!
//! The registry is journaled to `schema.tsv` (one `device\tmeasurement\tTYPE\tENCODING\tCOMPRESSION`
//! line per series, in the order the series appeared) so types survive restarts after
//! the write-ahead log has been trimmed. A table of the table model (see
//! [`table`](super::table)) is a device named by its owner key: its FIELD columns are its
//! series, its TAG columns lines whose measurement is U+001E and the tag key (`STRING PLAIN
//! UNCOMPRESSED`); the lines' order is the table's column order.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tsfile::basic::Column;
use tsfile::{Compression, DataType, Encoding};
use tsfiled_connectors::FieldValue;
use tsfiled_fsio::{FsFile, FsRef};

use crate::hasher::FxBuild;

/// Type, encoding and compression of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeriesType {
    /// Data type.
    pub data_type: DataType,
    /// Value encoding.
    pub encoding: Encoding,
    /// Page compression.
    pub compression: Compression,
}

impl SeriesType {
    /// The default encoding for a data type (INT TS_2DIFF, FLOAT/DOUBLE GORILLA,
    /// BOOLEAN RLE, TEXT PLAIN) with SNAPPY.
    pub fn default_for(data_type: DataType) -> SeriesType {
        TypeDefaults::default().series_type(data_type)
    }
}

/// How series are typed on first sight when no rule pins them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeDefaults {
    /// Type of integer values (INT64 or INT32).
    pub integer: DataType,
    /// Type of decimal values (DOUBLE or FLOAT).
    pub float: DataType,
    /// Encoding of BOOLEAN series.
    pub boolean_encoding: Encoding,
    /// Encoding of INT32 series.
    pub int32_encoding: Encoding,
    /// Encoding of INT64 series.
    pub int64_encoding: Encoding,
    /// Encoding of FLOAT series.
    pub float_encoding: Encoding,
    /// Encoding of DOUBLE series.
    pub double_encoding: Encoding,
    /// Encoding of TEXT series.
    pub text_encoding: Encoding,
    /// Compression of every series.
    pub compression: Compression,
    /// Whether a new series no rule matches gets its encoding and compression chosen at its
    /// first flush of at least [`MIN_SAMPLE`] points ([`choose`]); it starts with the ones
    /// above.
    pub choose: bool,
}

impl Default for TypeDefaults {
    /// INT64/DOUBLE; INT TS_2DIFF, FLOAT/DOUBLE GORILLA, BOOLEAN RLE, TEXT PLAIN; SNAPPY;
    /// nothing chosen (the pipeline's configuration chooses by default).
    fn default() -> Self {
        TypeDefaults {
            integer: DataType::INT64,
            float: DataType::DOUBLE,
            boolean_encoding: Encoding::RLE,
            int32_encoding: Encoding::TS_2DIFF,
            int64_encoding: Encoding::TS_2DIFF,
            float_encoding: Encoding::GORILLA,
            double_encoding: Encoding::GORILLA,
            text_encoding: Encoding::PLAIN,
            compression: Compression::SNAPPY,
            choose: false,
        }
    }
}

impl TypeDefaults {
    /// The data type a value gets when its series is first seen and no rule pins one.
    pub fn inferred_type(&self, v: &FieldValue) -> DataType {
        match v {
            FieldValue::Int(_) => self.integer,
            FieldValue::Float(_) => self.float,
            FieldValue::Bool(_) => DataType::BOOLEAN,
            FieldValue::Text(_) => DataType::TEXT,
        }
    }

    /// The default type, encoding and compression of a data type.
    pub fn series_type(&self, data_type: DataType) -> SeriesType {
        let encoding = match data_type.storage_type() {
            DataType::BOOLEAN => self.boolean_encoding,
            DataType::INT32 => self.int32_encoding,
            DataType::INT64 => self.int64_encoding,
            DataType::FLOAT => self.float_encoding,
            DataType::DOUBLE => self.double_encoding,
            _ => self.text_encoding,
        };
        SeriesType {
            data_type,
            encoding,
            compression: self.compression,
        }
    }
}

/// Schema rule patterns are the configuration's: `*` is one node, `**` one or more.
pub use tsfiled_config::PathPattern;

/// Whether `device`.`measurement` matches `pattern` (a device not under `root` never does).
pub fn pattern_matches(pattern: &PathPattern, device: &str, measurement: &str) -> bool {
    let mut nodes = device.split('.');
    if nodes.next() != Some("root") {
        return false;
    }
    let mut path: Vec<&str> = nodes.collect();
    path.push(measurement);
    pattern.matches_nodes(&path)
}

/// A schema rule: series matching `pattern` get the pinned parts.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaRule {
    /// Which series.
    pub pattern: PathPattern,
    /// Pinned data type (else typed on first sight).
    pub data_type: Option<DataType>,
    /// Pinned encoding (else the type's default).
    pub encoding: Option<Encoding>,
    /// Pinned compression (else SNAPPY).
    pub compression: Option<Compression>,
}

/// Validates a device path (IoTDB 0.10 rules, as the parsers apply them): `root`
/// then at least `sg_level` more nodes. The device may be its storage group itself, as in
/// IoTDB (`root.sg27.s3` with storage group `root.sg27`, IoTDB's REST examples).
pub fn validate_device(device: &str, sg_level: usize) -> Result<(), String> {
    tsfiled_connectors::path::validate_device(device)
        .map_err(|e| format!("device {device:?} {e}"))?;
    let n = device.split('.').count() - 1;
    if n < sg_level {
        return Err(format!(
            "device {device:?} needs at least {sg_level} nodes after root (the storage group level)"
        ));
    }
    Ok(())
}

/// Validates a measurement name (IoTDB 0.10 rules, as the parsers apply them).
pub fn validate_measurement(m: &str) -> Result<(), String> {
    tsfiled_connectors::path::validate_measurement(m).map_err(|e| format!("measurement {m:?} {e}"))
}

/// The storage group of a valid device: `root` plus `level` nodes; a table device's is its
/// database.
pub fn storage_group(device: &str, level: usize) -> &str {
    if let Some(db) = super::table::database(device) {
        return db;
    }
    let mut end = 0;
    for (i, (pos, _)) in device.match_indices('.').enumerate() {
        if i == level {
            end = pos;
            break;
        }
    }
    if end == 0 {
        device
    } else {
        &device[..end]
    }
}

/// Whether `encoding` can store `v`: GORILLA (TsFile 0.10's and 2.x's), CHIMP and SPRINTZ
/// end a page with NaN (FLOAT/DOUBLE), and TsFile 2.x's GORILLA and CHIMP with the INT32 or
/// INT64 minimum (their end-of-page marker), so they refuse those values; such a point is
/// rejected at intake (`type_mismatch`) instead of failing the flush.
#[inline]
pub fn storable(v: &tsfile::Value, encoding: Encoding) -> Result<(), &'static str> {
    use tsfile::Value as V;
    let nan = match v {
        V::Float(f) => f.is_nan(),
        V::Double(d) => d.is_nan(),
        _ => false,
    };
    let min = match v {
        V::Int32(i) => *i == i32::MIN,
        V::Int64(i) => *i == i64::MIN,
        _ => false,
    };
    match encoding {
        Encoding::GORILLA | Encoding::SPRINTZ if nan => {
            Err("NaN cannot be stored with this series' encoding (its end-of-page marker)")
        }
        Encoding::GORILLA_V2 | Encoding::CHIMP if nan || min => Err(
            "NaN and the INT32/INT64 minimum cannot be stored with this series' encoding (its end-of-page marker)",
        ),
        _ => Ok(()),
    }
}

/// Appends `v` to `column`, the values of a series of type `ty` (the column's type), or says
/// why not: an integer goes into INT64, INT32 (if in range), DOUBLE or FLOAT, a float into
/// DOUBLE or FLOAT, a boolean into BOOLEAN, a string into TEXT, and only a value [`storable`]
/// with the series' encoding. The message names the type (and the encoding when that refuses
/// the value).
#[inline]
pub fn append(column: &mut Column, v: &FieldValue, ty: SeriesType) -> Result<(), String> {
    use tsfile::Value as V;
    let unfit = |msg: &str| format!("{msg} ({})", ty.data_type);
    let stored = |value: &V| {
        storable(value, ty.encoding)
            .map_err(|msg| format!("{msg} ({} {})", ty.data_type, ty.encoding.name()))
    };
    match (column, v) {
        (Column::Int64(c), FieldValue::Int(i)) => stored(&V::Int64(*i)).map(|()| c.push(*i)),
        (Column::Int32(c), FieldValue::Int(i)) => {
            let x = i32::try_from(*i).map_err(|_| unfit("integer out of INT32 range"))?;
            stored(&V::Int32(x)).map(|()| c.push(x))
        }
        (Column::Double(c), FieldValue::Int(i)) => {
            stored(&V::Double(*i as f64)).map(|()| c.push(*i as f64))
        }
        (Column::Float(c), FieldValue::Int(i)) => {
            stored(&V::Float(*i as f32)).map(|()| c.push(*i as f32))
        }
        (Column::Double(c), FieldValue::Float(f)) => stored(&V::Double(*f)).map(|()| c.push(*f)),
        (Column::Float(c), FieldValue::Float(f)) => {
            stored(&V::Float(*f as f32)).map(|()| c.push(*f as f32))
        }
        (Column::Boolean(c), FieldValue::Bool(b)) => stored(&V::Boolean(*b)).map(|()| c.push(*b)),
        (Column::Text(c), FieldValue::Text(s)) => {
            let value = V::Text(s.as_bytes().to_vec());
            stored(&value)?;
            if let V::Text(x) = value {
                c.push(x);
            }
            Ok(())
        }
        (_, FieldValue::Float(_)) => Err(unfit("a float does not fit this series' type")),
        (_, FieldValue::Int(_)) => Err(unfit("an integer does not fit this series' type")),
        (_, FieldValue::Bool(_)) => Err(unfit("a boolean does not fit this series' type")),
        (_, FieldValue::Text(_)) => Err(unfit("a string does not fit this series' type")),
    }
}

/// Fewest points a flush must hold for [`choose`] to decide a series' encoding on them; a
/// series flushed with fewer keeps its starting encoding until a larger flush.
pub const MIN_SAMPLE: usize = 256;

/// Most points [`choose`] encodes (the first ones of the flush).
pub const MAX_SAMPLE: usize = 16384;

/// The lossless encodings format 000002 (the 0.10 reader) has for a data type, in order of
/// preference on equal size, among which [`choose`] picks for a series that started with
/// `start`: GORILLA only when `start` is GORILLA, since GORILLA refuses NaN, which other
/// starting encodings took at intake. FLOAT/DOUBLE under RLE and TS_2DIFF keep only
/// `float_precision` decimals, so they are never chosen.
fn candidates(data_type: DataType, start: Encoding) -> &'static [Encoding] {
    match data_type {
        DataType::BOOLEAN => &[Encoding::RLE, Encoding::PLAIN],
        DataType::INT32 | DataType::INT64 => &[Encoding::TS_2DIFF, Encoding::RLE, Encoding::PLAIN],
        DataType::FLOAT | DataType::DOUBLE if start == Encoding::GORILLA => {
            &[Encoding::GORILLA, Encoding::PLAIN]
        }
        _ => &[Encoding::PLAIN],
    }
}

/// The first `limit` of `values` encoded with `encoding` of `data_type` in format 000002, as
/// one page's value stream, appended to `out`; `None` if the encoder refuses one of them.
pub fn encode_values(
    encoding: Encoding,
    data_type: DataType,
    values: &Column,
    limit: usize,
    out: &mut Vec<u8>,
) -> Option<()> {
    let mut enc = tsfile::encoding::get_encoder(
        encoding,
        data_type,
        tsfile::encoding::DEFAULT_FLOAT_PRECISION,
    )
    .ok()?;
    fn head<T>(v: &[T], limit: usize) -> &[T] {
        &v[..limit.min(v.len())]
    }
    let r = match values {
        Column::Boolean(v) => enc.encode_bools(head(v, limit), out),
        Column::Int32(v) => enc.encode_i32s(head(v, limit), out),
        Column::Int64(v) => enc.encode_i64s(head(v, limit), out),
        Column::Float(v) => enc.encode_f32s(head(v, limit), out),
        Column::Double(v) => enc.encode_f64s(head(v, limit), out),
        Column::Text(v) => head(v, limit)
            .iter()
            .enumerate()
            .try_for_each(|(k, x)| enc.encode_binary(x, out).map_err(|e| (k, e))),
    };
    r.ok().and_then(|()| enc.flush(out).ok())
}

/// The encoding and compression a series that started as `start` is written with from now
/// on in format 000002, chosen on `sample` (the values of its first flush of at least
/// [`MIN_SAMPLE`] points, of which the first [`MAX_SAMPLE`] count): of the lossless
/// encodings 0.10 reads for the type (see [`candidates`]), each UNCOMPRESSED or SNAPPY, the
/// pair storing the sample in the fewest bytes; on a tie the earlier encoding, then
/// UNCOMPRESSED. The data type is `start`'s.
pub fn choose(start: SeriesType, sample: &Column) -> SeriesType {
    choose_among(start, sample, candidates(start.data_type, start.encoding))
}

/// [`choose`] among `encodings` (in order of preference). Every encoding is encoded first;
/// SNAPPY is tried only on a stream whose fewest Snappy bytes
/// ([`tsfile::compression::snappy_len_at_least`]) could still beat both the best pair so far
/// and every uncompressed stream, so the choice is the one of trying every pair.
fn choose_among(start: SeriesType, sample: &Column, encodings: &[Encoding]) -> SeriesType {
    let mut raws: Vec<Option<Vec<u8>>> = Vec::with_capacity(encodings.len());
    for &e in encodings {
        let mut raw = Vec::new();
        raws.push(encode_values(e, start.data_type, sample, MAX_SAMPLE, &mut raw).map(|()| raw));
    }
    let fewest_raw = raws.iter().flatten().map(Vec::len).min();
    let mut best: Option<(usize, Encoding, Compression)> = None;
    let offer = |best: &mut Option<_>, n: usize, e, c| {
        if best.is_none_or(|(b, _, _)| n < b) {
            *best = Some((n, e, c));
        }
    };
    for (&e, raw) in encodings.iter().zip(&raws) {
        let Some(raw) = raw else {
            continue;
        };
        offer(&mut best, raw.len(), e, Compression::UNCOMPRESSED);
        // A SNAPPY stream of at least `floor` bytes loses to the best pair so far (a tie
        // keeps the earlier), and to an uncompressed stream below `floor` whatever comes.
        let floor = tsfile::compression::snappy_len_at_least(raw.len());
        if best.is_some_and(|(b, _, _)| floor >= b) || fewest_raw.is_some_and(|f| f < floor) {
            continue;
        }
        let snappy = tsfile::compression::compressed_len(Compression::SNAPPY, raw);
        offer(
            &mut best,
            snappy.unwrap_or(usize::MAX),
            e,
            Compression::SNAPPY,
        );
    }
    match best {
        Some((_, encoding, compression)) => SeriesType {
            data_type: start.data_type,
            encoding,
            compression,
        },
        None => start,
    }
}

/// A known series: interned names and its frozen type.
#[derive(Debug, Clone)]
pub struct SeriesInfo {
    /// Device path (interned).
    pub device: Arc<str>,
    /// Measurement (interned).
    pub measurement: Arc<str>,
    /// Frozen type.
    pub ty: SeriesType,
}

#[derive(Debug, Default)]
struct DeviceEntry {
    device: Arc<str>,
    series: HashMap<Box<str>, (Arc<str>, SeriesType), FxBuild>,
    /// Series whose encoding is still to be chosen at a flush ([`Registry::settle`]).
    pending: HashSet<Box<str>>,
    /// Series whose encoding was chosen in this run: the type files are written with. Intake
    /// keeps the series' type until a restart, so that no value the starting encoding refused
    /// (GORILLA: NaN) reaches a file still open that registered the series with it.
    written: HashMap<Box<str>, SeriesType>,
}

/// Marks a TAG column's line in the journal (before the tag key).
const TAG_LINE: char = '\u{1e}';

/// All series of a pipeline with their frozen types, plus the rules for new ones.
pub struct Registry {
    devices: HashMap<Box<str>, DeviceEntry, FxBuild>,
    /// Per table owner, its columns (name, is a TAG) in first-seen order.
    tables: HashMap<Box<str>, Vec<(Arc<str>, bool)>>,
    rules: Vec<SchemaRule>,
    defaults: TypeDefaults,
    journal: Option<BufWriter<Box<dyn FsFile>>>,
    journal_path: Option<PathBuf>,
    fs: Option<FsRef>,
    /// A journal write or fsync failed: the file is rewritten from memory at the next sync.
    broken: bool,
    count: usize,
    dirty: bool,
}

impl Registry {
    /// An empty registry without a journal (tests).
    pub fn in_memory(rules: Vec<SchemaRule>) -> Registry {
        Registry {
            devices: HashMap::default(),
            tables: HashMap::new(),
            rules,
            defaults: TypeDefaults::default(),
            journal: None,
            journal_path: None,
            fs: None,
            broken: false,
            count: 0,
            dirty: false,
        }
    }

    /// Loads `path` (ignoring a torn last line) and appends to it from then on.
    pub fn open(fs: FsRef, path: &Path, rules: Vec<SchemaRule>) -> io::Result<Registry> {
        let mut reg = Registry::in_memory(rules);
        let mut good_len = 0u64;
        let data = match fs.read(path) {
            Ok(d) => Some(d),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let existed = data.is_some();
        if let Some(data) = &data {
            for raw in data.split_inclusive(|&b| b == b'\n') {
                let Ok(line) = std::str::from_utf8(raw) else {
                    break;
                };
                let n = line.len();
                if !line.ends_with('\n') {
                    break;
                }
                let cols: Vec<&str> = line.trim_end_matches('\n').split('\t').collect();
                let parsed = match cols.as_slice() {
                    [d, m, t, e, c] => (|| {
                        Some(SeriesType {
                            data_type: t.parse().ok()?,
                            encoding: e.parse().ok()?,
                            compression: c.parse().ok()?,
                        })
                    })()
                    .map(|ty| (d.to_string(), m.to_string(), ty)),
                    _ => None,
                };
                let Some((d, m, ty)) = parsed else { break };
                if reg.insert(&d, &m, ty).ty != ty {
                    // A later line of a series: the encoding chosen at its first flush.
                    reg.retype(&d, &m, ty);
                }
                good_len += n as u64;
            }
        }
        let mut f = fs.open_append(path)?;
        if data.as_ref().is_some_and(|d| d.len() as u64 > good_len) {
            f.set_len(good_len)?;
            f.sync_all()?;
        }
        if !existed {
            if let Some(dir) = path.parent() {
                fs.sync_dir(dir)?;
            }
        }
        reg.journal = Some(BufWriter::new(f));
        reg.journal_path = Some(path.to_path_buf());
        reg.fs = Some(fs);
        reg.dirty = false;
        Ok(reg)
    }

    /// Replaces the rules and defaults (they apply to series not seen yet).
    pub fn set_rules(&mut self, rules: Vec<SchemaRule>, defaults: TypeDefaults) {
        self.rules = rules;
        self.defaults = defaults;
    }

    /// Number of series.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no series is known.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn insert(&mut self, device: &str, measurement: &str, ty: SeriesType) -> SeriesInfo {
        if super::table::is_table_key(device) {
            let cols = self.tables.entry(device.into()).or_default();
            let (name, tag) = match measurement.strip_prefix(TAG_LINE) {
                Some(k) => (k, true),
                None => (measurement, false),
            };
            if !cols.iter().any(|(c, _)| &**c == name) {
                cols.push((Arc::from(name), tag));
            }
            if tag {
                return SeriesInfo {
                    device: Arc::from(device),
                    measurement: Arc::from(name),
                    ty,
                };
            }
        }
        let entry = self
            .devices
            .entry(device.into())
            .or_insert_with(|| DeviceEntry {
                device: Arc::from(device),
                ..DeviceEntry::default()
            });
        let dev = entry.device.clone();
        let (m, ty) = entry
            .series
            .entry(measurement.into())
            .or_insert_with(|| {
                self.count += 1;
                (Arc::from(measurement), ty)
            })
            .clone();
        SeriesInfo {
            device: dev,
            measurement: m,
            ty,
        }
    }

    /// Whether a device is known (and so valid).
    pub fn knows_device(&self, device: &str) -> bool {
        self.devices.contains_key(device)
    }

    /// The known series, if any.
    pub fn get(&self, device: &str, measurement: &str) -> Option<SeriesInfo> {
        if let Some(owner) = super::table::owner(device).filter(|o| o.len() < device.len()) {
            // A FIELD column of a table device: the table's type, the device's key.
            let s = self.get(owner, measurement)?;
            return Some(SeriesInfo {
                device: Arc::from(device),
                ..s
            });
        }
        let e = self.devices.get(device)?;
        let (m, ty) = e.series.get(measurement)?;
        Some(SeriesInfo {
            device: e.device.clone(),
            measurement: m.clone(),
            ty: *ty,
        })
    }

    /// The columns of a table (by owner key, see [`table`](super::table)): name and whether
    /// it is a TAG column, in first-seen order; empty for an unknown table.
    pub fn table_columns(&self, owner: &str) -> &[(Arc<str>, bool)] {
        self.tables.get(owner).map_or(&[], Vec::as_slice)
    }

    /// Appends TAG columns to a table (by owner key) and makes the journal durable at once: a
    /// device key depends on the TAG order, so it is on disk before any record using it.
    pub fn define_tags(&mut self, owner: &str, keys: &[&str]) -> io::Result<()> {
        let ty = SeriesType {
            data_type: DataType::STRING,
            encoding: Encoding::PLAIN,
            compression: Compression::UNCOMPRESSED,
        };
        for k in keys {
            if self.table_columns(owner).iter().any(|(c, _)| &**c == *k) {
                continue;
            }
            let m = format!("{TAG_LINE}{k}");
            self.insert(owner, &m, ty);
            self.journal_line(owner, &m, ty);
        }
        self.sync()
    }

    /// The type a new series gets: the type a matching rule pins, else the type its first point
    /// declares, else the defaults' type for its first value; the encoding a rule pins (when it
    /// supports the type), else the defaults' encoding for the type.
    pub fn type_for_new(
        &self,
        device: &str,
        measurement: &str,
        first: &FieldValue,
        declared: Option<DataType>,
    ) -> SeriesType {
        let rule_path = super::table::owner(device).and_then(super::table::rule_device);
        let device = rule_path.as_deref().unwrap_or(device);
        let rule = self
            .rules
            .iter()
            .find(|r| pattern_matches(&r.pattern, device, measurement));
        let data_type = rule
            .and_then(|r| r.data_type)
            .or(declared)
            .unwrap_or_else(|| self.defaults.inferred_type(first));
        let mut ty = self.defaults.series_type(data_type);
        if let Some(r) = rule {
            // The configuration checked the rule's encoding against the pipeline's
            // format; here only a type it cannot encode (a declared type) keeps the default.
            if let Some(e) = r.encoding {
                if e.supports(data_type) || e.supports_v4(data_type) {
                    ty.encoding = e;
                }
            }
            if let Some(c) = r.compression {
                ty.compression = c;
            }
        }
        ty
    }

    /// The series' frozen type, typing and journaling it on first sight.
    pub fn resolve(&mut self, device: &str, measurement: &str, first: &FieldValue) -> SeriesInfo {
        if let Some(s) = self.get(device, measurement) {
            return s;
        }
        let ty = self.type_for_new(device, measurement, first, None);
        self.define(device, measurement, ty)
    }

    /// Records a series with a known type (replay); keeps an existing one.
    pub fn define(&mut self, device: &str, measurement: &str, ty: SeriesType) -> SeriesInfo {
        if let Some(s) = self.get(device, measurement) {
            return s;
        }
        if let Some(owner) = super::table::owner(device).filter(|o| o.len() < device.len()) {
            // A FIELD column of a table device is the table's.
            let owner = owner.to_string();
            let s = self.define(&owner, measurement, ty);
            return SeriesInfo {
                device: Arc::from(device),
                ..s
            };
        }
        let info = self.insert(device, measurement, ty);
        self.journal_line(device, measurement, ty);
        // (Table devices exist in v4 only, where nothing is chosen.)
        if self.defaults.choose
            && !self
                .rules
                .iter()
                .any(|r| pattern_matches(&r.pattern, device, measurement))
        {
            if let Some(e) = self.devices.get_mut(device) {
                e.pending.insert(measurement.into());
            }
        }
        info
    }

    /// Sets the encoding and compression of a known series of the same data type.
    fn retype(&mut self, device: &str, measurement: &str, ty: SeriesType) {
        let known = self.devices.get_mut(device);
        if let Some((_, t)) = known.and_then(|e| e.series.get_mut(measurement)) {
            if t.data_type == ty.data_type {
                *t = ty;
            }
        }
    }

    /// The type a known series is written with in a format-000002 flush of `values`. A series
    /// defined in this run whose encoding no rule pins (and the defaults let choose) gets it
    /// chosen now ([`choose`]) if the flush holds at least [`MIN_SAMPLE`] points; the choice
    /// is journaled (a second line of the series, which wins when the journal is loaded) and
    /// kept from then on: for the files of this run, and as the series' type ([`get`]) from
    /// the next start on. `None` for a series not known (or a table's, which v4 writes).
    ///
    /// [`get`]: Registry::get
    pub fn settle(
        &mut self,
        device: &str,
        measurement: &str,
        values: &Column,
    ) -> Option<SeriesType> {
        let e = self.devices.get_mut(device)?;
        let (_, ty) = e.series.get(measurement)?;
        let ty = *ty;
        if let Some(w) = e.written.get(measurement) {
            return Some(*w);
        }
        if values.len() < MIN_SAMPLE
            || values.data_type() != ty.data_type
            || !e.pending.remove(measurement)
        {
            return Some(ty);
        }
        let chosen = choose(ty, values);
        if chosen != ty {
            e.written.insert(measurement.into(), chosen);
            self.journal_line(device, measurement, chosen);
        }
        Some(chosen)
    }

    fn journal_line(&mut self, device: &str, measurement: &str, ty: SeriesType) {
        if let Some(j) = self.journal.as_mut() {
            let line = format!(
                "{device}\t{measurement}\t{}\t{}\t{}\n",
                ty.data_type, ty.encoding, ty.compression
            );
            if let Err(e) = j.write_all(line.as_bytes()) {
                tracing::error!(error = %e, "schema journal write failed; it is rewritten at the next sync");
                self.broken = true;
            }
            self.dirty = true;
        }
    }

    /// Makes the journal durable (before the write-ahead log is trimmed).
    pub fn sync(&mut self) -> io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        if self.broken {
            return self.rewrite();
        }
        if let Some(j) = self.journal.as_mut() {
            let r = j.flush().and_then(|_| j.get_mut().sync_data());
            if let Err(e) = r {
                // Never fsync this handle again and believe it: rewrite from memory.
                self.broken = true;
                return Err(e);
            }
        }
        self.dirty = false;
        Ok(())
    }

    /// Replaces the journal with the registry's content (temporary file, fsync,
    /// rename) and appends to the new file from then on.
    fn rewrite(&mut self) -> io::Result<()> {
        let (Some(fs), Some(path)) = (self.fs.clone(), self.journal_path.clone()) else {
            return Ok(());
        };
        // Drop the untrusted handle without flushing what it buffered.
        if let Some(j) = self.journal.take() {
            let _ = j.into_parts();
        }
        let mut body = String::new();
        // Tables first, their columns in order (the order is the table's).
        for (owner, cols) in &self.tables {
            for (c, tag) in cols {
                let (m, ty) = if *tag {
                    (
                        format!("{TAG_LINE}{c}"),
                        SeriesType {
                            data_type: DataType::STRING,
                            encoding: Encoding::PLAIN,
                            compression: Compression::UNCOMPRESSED,
                        },
                    )
                } else {
                    match self.devices.get(&**owner).and_then(|d| d.series.get(&**c)) {
                        Some((_, ty)) => (c.to_string(), *ty),
                        None => continue,
                    }
                };
                body.push_str(&format!(
                    "{owner}\t{m}\t{}\t{}\t{}\n",
                    ty.data_type, ty.encoding, ty.compression
                ));
            }
        }
        for d in self.devices.values() {
            if self.tables.contains_key(&*d.device) {
                continue;
            }
            for (m, ty) in d.series.values() {
                let ty = d.written.get(&**m).unwrap_or(ty);
                body.push_str(&format!(
                    "{}\t{m}\t{}\t{}\t{}\n",
                    d.device, ty.data_type, ty.encoding, ty.compression
                ));
            }
        }
        tsfiled_fsio::write_atomic(&*fs, &path, body.as_bytes())?;
        self.journal = Some(BufWriter::new(fs.open_append(&path)?));
        self.broken = false;
        self.dirty = false;
        Ok(())
    }

    /// The journal file, if any.
    pub fn journal_path(&self) -> Option<&Path> {
        self.journal_path.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`storable`] refuses exactly what the format library's encoders refuse (every
    /// encoding of either format, the marker values and their neighbours).
    #[test]
    fn storable_is_what_the_encoders_take() {
        use tsfile::encoding::{get_encoder, get_encoder_v4, DEFAULT_FLOAT_PRECISION};
        use tsfile::Value as V;
        let values = [
            V::Int32(i32::MIN),
            V::Int32(i32::MIN + 1),
            V::Int32(i32::MAX),
            V::Int64(i64::MIN),
            V::Int64(i64::MIN + 1),
            V::Float(f32::NAN),
            V::Float(f32::INFINITY),
            V::Float(-0.0),
            V::Double(f64::NAN),
            V::Double(f64::NEG_INFINITY),
            V::Double(1.5),
        ];
        let mut checked = 0;
        for v in &values {
            let t = v.data_type();
            for e in Encoding::ALL.iter().copied() {
                for v4 in [false, true] {
                    let enc = if v4 {
                        get_encoder_v4(e, t, DEFAULT_FLOAT_PRECISION)
                    } else {
                        get_encoder(e, t, DEFAULT_FLOAT_PRECISION)
                    };
                    let Ok(mut enc) = enc else { continue };
                    let mut out = Vec::new();
                    let taken = match v {
                        V::Int32(x) => enc.encode_i32(*x, &mut out),
                        V::Int64(x) => enc.encode_i64(*x, &mut out),
                        V::Float(x) => enc.encode_f32(*x, &mut out),
                        V::Double(x) => enc.encode_f64(*x, &mut out),
                        _ => unreachable!(),
                    }
                    .and_then(|_| enc.flush(&mut out))
                    .is_ok();
                    assert_eq!(storable(v, e).is_ok(), taken, "{e} (v4: {v4}) {v:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 60, "{checked}");
    }

    #[test]
    fn patterns() {
        let m = |p: &str, d: &str, s: &str| pattern_matches(&PathPattern::parse(p).unwrap(), d, s);
        assert!(m("root.sg.*.temp", "root.sg.d1", "temp"));
        assert!(!m("root.sg.*.temp", "root.sg.d1.x", "temp"));
        assert!(!m("root.sg.*.temp", "root.sg.d1", "hum"));
        assert!(m("root.**.status", "root.a", "status"));
        assert!(m("root.**.status", "root.a.b.c", "status"));
        assert!(!m("root.**.status", "root.a.b", "state"));
        // `**` is one or more nodes, as documented (and as in IoTDB).
        assert!(m("root.plant.**.status", "root.plant.a", "status"));
        assert!(!m("root.plant.**.status", "root.plant", "status"));
        assert!(m("root.**", "root.x.y", "z"));
        assert!(!m("root.**", "other.x", "z"));
        assert!(PathPattern::parse("sg.*").is_err());
        assert!(PathPattern::parse("root..a").is_err());
    }

    #[test]
    fn devices_and_groups() {
        assert!(validate_device("root.sg.d1", 1).is_ok());
        assert!(validate_device("root.sg", 1).is_ok());
        assert_eq!(storage_group("root.sg", 1), "root.sg");
        assert!(validate_device("root.sg", 2).is_err());
        assert!(validate_device("sg.d1", 1).is_err());
        assert!(validate_device("root.sg.d 1", 1).is_err());
        assert!(validate_device("root.sg..d1", 1).is_err());
        assert!(validate_device("root.a.b.c", 2).is_ok());
        assert!(validate_measurement("s1").is_ok());
        assert!(validate_measurement("time").is_err());
        assert!(validate_measurement("a.b").is_err());
        assert_eq!(storage_group("root.sg.d1", 1), "root.sg");
        assert_eq!(storage_group("root.a.b.c.d", 2), "root.a.b");
    }

    #[test]
    fn conversions() {
        let ty = |data_type, encoding| SeriesType {
            data_type,
            encoding,
            compression: Compression::SNAPPY,
        };
        let plain = |t| ty(t, Encoding::PLAIN);
        // Accepted values, appended in order.
        let mut doubles = Column::with_capacity(DataType::DOUBLE, 0);
        append(&mut doubles, &FieldValue::Int(3), plain(DataType::DOUBLE)).unwrap();
        append(
            &mut doubles,
            &FieldValue::Float(-2.5),
            plain(DataType::DOUBLE),
        )
        .unwrap();
        assert_eq!(doubles, Column::Double(vec![3.0, -2.5]));
        let mut floats = Column::with_capacity(DataType::FLOAT, 0);
        append(&mut floats, &FieldValue::Int(-4), plain(DataType::FLOAT)).unwrap();
        append(
            &mut floats,
            &FieldValue::Float(0.25),
            plain(DataType::FLOAT),
        )
        .unwrap();
        assert_eq!(floats, Column::Float(vec![-4.0, 0.25]));
        let mut ints = Column::with_capacity(DataType::INT32, 0);
        append(&mut ints, &FieldValue::Int(-7), plain(DataType::INT32)).unwrap();
        assert_eq!(
            append(&mut ints, &FieldValue::Int(1 << 40), plain(DataType::INT32)),
            Err("integer out of INT32 range (INT32)".to_string())
        );
        assert_eq!(ints, Column::Int32(vec![-7]));
        let mut longs = Column::with_capacity(DataType::INT64, 0);
        append(
            &mut longs,
            &FieldValue::Int(i64::MIN),
            plain(DataType::INT64),
        )
        .unwrap();
        assert_eq!(
            append(&mut longs, &FieldValue::Float(3.5), plain(DataType::INT64)),
            Err("a float does not fit this series' type (INT64)".to_string())
        );
        assert!(append(&mut longs, &FieldValue::Bool(true), plain(DataType::INT64)).is_err());
        assert!(append(
            &mut longs,
            &FieldValue::Text("1".into()),
            plain(DataType::INT64)
        )
        .is_err());
        // TsFile 2.x's GORILLA ends a page with the INT64 minimum.
        let gorilla2 = ty(DataType::INT64, Encoding::GORILLA_V2);
        let refused = append(&mut longs, &FieldValue::Int(i64::MIN), gorilla2).unwrap_err();
        assert!(refused.ends_with("(INT64 GORILLA_V2)"), "{refused}");
        assert_eq!(longs, Column::Int64(vec![i64::MIN]));
        let gorilla = ty(DataType::DOUBLE, Encoding::GORILLA);
        assert!(append(&mut doubles, &FieldValue::Float(f64::NAN), gorilla).is_err());
        assert_eq!(doubles.len(), 2);
        let mut texts = Column::with_capacity(DataType::TEXT, 0);
        append(
            &mut texts,
            &FieldValue::Text("a".into()),
            plain(DataType::TEXT),
        )
        .unwrap();
        assert_eq!(
            append(&mut texts, &FieldValue::Int(1), plain(DataType::TEXT)),
            Err("an integer does not fit this series' type (TEXT)".to_string())
        );
        assert_eq!(texts, Column::Text(vec![b"a".to_vec()]));
        let mut bools = Column::with_capacity(DataType::BOOLEAN, 0);
        append(
            &mut bools,
            &FieldValue::Bool(true),
            plain(DataType::BOOLEAN),
        )
        .unwrap();
        assert_eq!(bools, Column::Boolean(vec![true]));
    }

    /// A rule's v4 encoding (validated by the configuration for a v4 pipeline) types the
    /// series, and the journal keeps it across a restart.
    #[test]
    fn rules_with_v4_encodings_type_series_and_are_journaled() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("schema.tsv");
        let rule = |p: &str, t, e| SchemaRule {
            pattern: PathPattern::parse(p).unwrap(),
            data_type: Some(t),
            encoding: Some(e),
            compression: Some(Compression::ZSTD),
        };
        let rules = vec![
            rule("root.sg.d.c", DataType::DOUBLE, Encoding::CHIMP),
            rule("root.sg.d.z", DataType::INT64, Encoding::ZIGZAG),
            rule("root.sg.d.g", DataType::FLOAT, Encoding::GORILLA_V2),
            rule("root.sg.d.t", DataType::TEXT, Encoding::PLAIN_DICTIONARY),
        ];
        let want = [
            ("c", DataType::DOUBLE, Encoding::CHIMP),
            ("z", DataType::INT64, Encoding::ZIGZAG),
            ("g", DataType::FLOAT, Encoding::GORILLA_V2),
            ("t", DataType::TEXT, Encoding::PLAIN_DICTIONARY),
        ];
        {
            let mut r = Registry::open(tsfiled_fsio::std_fs(), &path, rules).unwrap();
            for (m, t, e) in want {
                let s = r.resolve("root.sg.d", m, &FieldValue::Int(1));
                assert_eq!((s.ty.data_type, s.ty.encoding), (t, e), "{m}");
                assert_eq!(s.ty.compression, Compression::ZSTD);
            }
            r.sync().unwrap();
        }
        let r = Registry::open(tsfiled_fsio::std_fs(), &path, vec![]).unwrap();
        for (m, t, e) in want {
            let s = r.get("root.sg.d", m).unwrap();
            assert_eq!((s.ty.data_type, s.ty.encoding), (t, e), "{m}");
            assert_eq!(s.ty.compression, Compression::ZSTD);
        }
    }

    #[test]
    fn first_sight_then_frozen_and_journaled() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("schema.tsv");
        let rules = vec![SchemaRule {
            pattern: PathPattern::parse("root.sg.*.pinned").unwrap(),
            data_type: Some(DataType::FLOAT),
            encoding: Some(Encoding::RLE),
            compression: Some(Compression::UNCOMPRESSED),
        }];
        {
            let mut r = Registry::open(tsfiled_fsio::std_fs(), &path, rules.clone()).unwrap();
            let s = r.resolve("root.sg.d1", "a", &FieldValue::Int(1));
            assert_eq!(s.ty, SeriesType::default_for(DataType::INT64));
            assert_eq!(s.ty.encoding, Encoding::TS_2DIFF);
            let s = r.resolve("root.sg.d1", "a", &FieldValue::Float(1.5));
            assert_eq!(s.ty.data_type, DataType::INT64, "frozen");
            let s = r.resolve("root.sg.d1", "pinned", &FieldValue::Int(1));
            assert_eq!(s.ty.data_type, DataType::FLOAT);
            assert_eq!(s.ty.encoding, Encoding::RLE);
            assert_eq!(s.ty.compression, Compression::UNCOMPRESSED);
            r.resolve("root.sg.d2", "b", &FieldValue::Text("x".into()));
            r.sync().unwrap();
        }
        // A torn last line is ignored and cut.
        let mut data = std::fs::read(&path).unwrap();
        data.extend_from_slice(b"root.sg.d3\tc\tINT");
        std::fs::write(&path, &data).unwrap();
        let mut r = Registry::open(tsfiled_fsio::std_fs(), &path, rules).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(
            r.get("root.sg.d2", "b").unwrap().ty.data_type,
            DataType::TEXT
        );
        assert!(r.get("root.sg.d3", "c").is_none());
        r.resolve("root.sg.d3", "c", &FieldValue::Bool(true));
        r.sync().unwrap();
        let r = Registry::open(tsfiled_fsio::std_fs(), &path, vec![]).unwrap();
        assert_eq!(r.len(), 4);
        assert_eq!(
            r.get("root.sg.d3", "c").unwrap().ty.data_type,
            DataType::BOOLEAN
        );
    }
}

/// The encoding chosen at a series' first flush ([`choose`], [`Registry::settle`]).
#[cfg(test)]
mod choice_tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::*;

    fn chooser(rules: Vec<SchemaRule>) -> Registry {
        let mut r = Registry::in_memory(vec![]);
        let defaults = TypeDefaults {
            choose: true,
            ..TypeDefaults::default()
        };
        r.set_rules(rules, defaults);
        r
    }

    /// 256 INT64 values of 5: RLE is one run (uvarint length 1 byte, bit width 1 byte, run
    /// header uvarint 512 2 bytes, the value 1 byte: 5 bytes), TS_2DIFF two 24-byte block
    /// headers (48 bytes), PLAIN 2048 bytes; SNAPPY cannot shrink 5 bytes (its length varint
    /// and a literal tag alone add 2).
    fn constant_ints() -> Column {
        Column::Int64(vec![5; 256])
    }

    #[test]
    fn by_hand_the_smallest_encoding_wins() {
        let start = SeriesType::default_for(DataType::INT64);
        let c = choose(start, &constant_ints());
        assert_eq!(
            (c.encoding, c.compression),
            (Encoding::RLE, Compression::UNCOMPRESSED)
        );
        assert_eq!(c.data_type, DataType::INT64);
        // A ramp 1000 + 7i: TS_2DIFF stores only block headers (every delta equals the
        // smallest: 0-bit fields), at most 48 bytes; RLE bit-packs 256 12-bit values (384
        // bytes and more), PLAIN 2048 bytes that SNAPPY cannot bring below 8 per 2 bytes of
        // change.
        let ramp = Column::Int64((0..256).map(|i| 1000 + 7 * i).collect());
        assert_eq!(choose(start, &ramp).encoding, Encoding::TS_2DIFF);
        // INT32 the same.
        let ramp32 = Column::Int32((0..256).map(|i| 1000 + 7 * i).collect());
        let start32 = SeriesType::default_for(DataType::INT32);
        assert_eq!(choose(start32, &ramp32).encoding, Encoding::TS_2DIFF);
        // 256 DOUBLE values of 1.5: GORILLA is the first value and one 0 bit per repeat
        // (about 50 bytes with its end marker), PLAIN 2048 bytes (SNAPPY: about 100).
        let flat = Column::Double(vec![1.5; 256]);
        let d = SeriesType::default_for(DataType::DOUBLE);
        assert_eq!(choose(d, &flat).encoding, Encoding::GORILLA);
        // GORILLA is not a candidate for a series that started PLAIN (it took NaN at intake).
        let plain_start = SeriesType {
            encoding: Encoding::PLAIN,
            ..d
        };
        assert_eq!(choose(plain_start, &flat).encoding, Encoding::PLAIN);
        // An empty sample: TS_2DIFF and PLAIN write nothing, RLE its 1-byte length, SNAPPY
        // an empty block is 1 byte: the tie goes to the first candidate, uncompressed.
        let t = choose(start, &Column::Int64(vec![]));
        assert_eq!(
            (t.encoding, t.compression),
            (Encoding::TS_2DIFF, Compression::UNCOMPRESSED)
        );
        // 256 full-range pseudo-random INT64 (xorshift): PLAIN is 8 bytes a value; RLE
        // bit-packs them 64 bits wide plus its headers, TS_2DIFF stores deltas as wide plus
        // 24-byte block headers; SNAPPY finds nothing to copy and adds its tags.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let random: Vec<u64> = (0..256).map(|_| next()).collect();
        let ints = Column::Int64(random.iter().map(|&v| v as i64).collect());
        let t = choose(start, &ints);
        assert_eq!(
            (t.encoding, t.compression),
            (Encoding::PLAIN, Compression::UNCOMPRESSED)
        );
        // The same bits as DOUBLE (bit 62 cleared: no NaN): GORILLA spends a 2-bit control
        // and the meaningful bits of each XOR, about 62, plus 12 bits of window when it
        // changes: more than PLAIN's 64.
        let doubles = Column::Double(
            random
                .iter()
                .map(|&v| f64::from_bits(v & !(1 << 62)))
                .collect(),
        );
        let t = choose(d, &doubles);
        assert_eq!(
            (t.encoding, t.compression),
            (Encoding::PLAIN, Compression::UNCOMPRESSED)
        );
        // 256 BOOLEAN true: RLE one run (length, width, run header 2 bytes, value: 5 bytes),
        // PLAIN 256 bytes (SNAPPY: over 10).
        let b = SeriesType::default_for(DataType::BOOLEAN);
        let t = choose(b, &Column::Boolean(vec![true; 256]));
        assert_eq!(
            (t.encoding, t.compression),
            (Encoding::RLE, Compression::UNCOMPRESSED)
        );
        // TEXT has PLAIN only.
        let t = SeriesType::default_for(DataType::TEXT);
        let text = Column::Text(vec![b"a".to_vec(); 256]);
        assert_eq!(choose(t, &text).encoding, Encoding::PLAIN);
    }

    /// The import benchmark's columns (BENCHMARKS.md, "File size": 1,000,000 rows, `Time`
    /// every 10 ms): the choice recorded there for its first flush is TS_2DIFF SNAPPY for the
    /// INT64 columns and PLAIN SNAPPY for the DOUBLE ones (their 1,000-row period is 8,000
    /// PLAIN bytes, inside the 16,384 sampled values, where SNAPPY copies it).
    #[test]
    fn the_import_benchmark_columns_choose_as_recorded() {
        let rows = 20_000u64;
        for c in [0u64, 1, 2, 9] {
            let (col, want) = if c % 2 == 0 {
                let v = (0..rows).map(|r| ((r * 7 + c * 13) % 100_000) as i64);
                (Column::Int64(v.collect()), Encoding::TS_2DIFF)
            } else {
                let v = (0..rows).map(|r| {
                    format!("{}.{:02}", (r + c) % 1000, (r * 3 + c) % 100)
                        .parse()
                        .unwrap()
                });
                (Column::Double(v.collect()), Encoding::PLAIN)
            };
            let start = SeriesType::default_for(if c % 2 == 0 {
                DataType::INT64
            } else {
                DataType::DOUBLE
            });
            let t = choose(start, &col);
            assert_eq!(
                (t.encoding, t.compression),
                (want, Compression::SNAPPY),
                "s{c}"
            );
        }
    }

    /// The choice skips SNAPPY only where it cannot win: it equals the pair found by trying
    /// every encoding UNCOMPRESSED and SNAPPY on the first MAX_SAMPLE values (the rule of
    /// [`choose`]), on series where the skip happens and where it does not.
    #[test]
    fn the_choice_is_that_of_trying_every_pair() {
        fn every_pair(start: SeriesType, sample: &Column) -> (Encoding, Compression) {
            let mut best: Option<(usize, Encoding, Compression)> = None;
            for &e in candidates(start.data_type, start.encoding) {
                let mut raw = Vec::new();
                if encode_values(e, start.data_type, sample, MAX_SAMPLE, &mut raw).is_none() {
                    continue;
                }
                let mut z = Vec::new();
                tsfile::compression::compress(Compression::SNAPPY, &raw, &mut z).unwrap();
                for (n, c) in [
                    (raw.len(), Compression::UNCOMPRESSED),
                    (z.len(), Compression::SNAPPY),
                ] {
                    if best.is_none_or(|(b, _, _)| n < b) {
                        best = Some((n, e, c));
                    }
                }
            }
            best.map_or((start.encoding, start.compression), |(_, e, c)| (e, c))
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let noise: Vec<u64> = (0..20_000).map(|_| next()).collect();
        let ints = |f: &dyn Fn(usize) -> i64, n: usize| Column::Int64((0..n).map(f).collect());
        let doubles = |f: &dyn Fn(usize) -> f64, n: usize| Column::Double((0..n).map(f).collect());
        let cases = [
            ints(&|_| 42, 1000),
            ints(&|i| i as i64 * 3, 20_000),
            ints(&|i| (i % 100) as i64, 5000),
            ints(&|i| (noise[i] % 1000) as i64, 3000),
            ints(&|i| noise[i] as i64, 300),
            // Beyond MAX_SAMPLE the values change: only the first MAX_SAMPLE count.
            ints(
                &|i| if i < MAX_SAMPLE { 5 } else { noise[i] as i64 },
                20_000,
            ),
            doubles(&|_| 1.5, 2000),
            doubles(&|i| ((i * 70) % 10_000) as f64 / 10.0, 700),
            doubles(&|i| ((i * 70) % 10_000) as f64 / 10.0, 3000),
            doubles(&|i| (i % 4) as f64, 4000),
            doubles(&|i| f64::from_bits(noise[i] & !(1 << 62)), 500),
            Column::Boolean((0..3000).map(|i| i % 3 == 0).collect()),
            Column::Boolean(vec![false; 300]),
            Column::Int64(vec![]),
        ];
        let mut skipped = 0;
        for col in &cases {
            let dt = col.data_type();
            let start = SeriesType::default_for(dt);
            let t = choose(start, col);
            assert_eq!(
                (t.encoding, t.compression),
                every_pair(start, col),
                "{dt} {}",
                col.len()
            );
            // Whether some SNAPPY trial is skipped: a stream whose fewest Snappy bytes exceed
            // the smallest uncompressed one.
            let raws: Vec<usize> = candidates(dt, start.encoding)
                .iter()
                .map(|&e| {
                    let mut raw = Vec::new();
                    encode_values(e, dt, col, MAX_SAMPLE, &mut raw).map_or(0, |()| raw.len())
                })
                .collect();
            let fewest = raws.iter().min().unwrap();
            skipped += usize::from(
                raws.iter()
                    .any(|&r| tsfile::compression::snappy_len_at_least(r) > *fewest),
            );
        }
        assert!(skipped >= 3, "{skipped}");
    }

    /// Per series of a golden file: its values in order; and its chunks' bytes.
    type Golden = (Vec<(String, Vec<String>)>, HashMap<String, i64>);

    /// `(measurement, values)` of the Java-written golden file `name`, and the bytes of each
    /// series' chunks (pages, time column included).
    fn golden(name: &str) -> Golden {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../format/tests/fixtures");
        let text = std::fs::read_to_string(dir.join(format!("{name}.expected.tsv"))).unwrap();
        let mut series: Vec<(String, Vec<String>)> = Vec::new();
        for line in text.lines() {
            let cols: Vec<&str> = line.split('\t').collect();
            match series.last_mut() {
                Some((m, v)) if m == cols[1] => v.push(cols[4].to_string()),
                _ => series.push((cols[1].to_string(), vec![cols[4].to_string()])),
            }
        }
        let reader =
            tsfile::file::reader::TsFileReader::open_path(dir.join(format!("{name}.tsfile")))
                .unwrap();
        let mut bytes = HashMap::new();
        for ev in reader.walk() {
            if let tsfile::file::reader::WalkEvent::ChunkHeader { header, .. } = ev.unwrap() {
                *bytes.entry(header.measurement).or_insert(0) += i64::from(header.data_size);
            }
        }
        (series, bytes)
    }

    fn parse(dt: DataType, v: &[String]) -> Column {
        match dt {
            DataType::INT64 => Column::Int64(v.iter().map(|x| x.parse().unwrap()).collect()),
            DataType::INT32 => Column::Int32(v.iter().map(|x| x.parse().unwrap()).collect()),
            DataType::DOUBLE => Column::Double(v.iter().map(|x| x.parse().unwrap()).collect()),
            DataType::FLOAT => Column::Float(v.iter().map(|x| x.parse().unwrap()).collect()),
            _ => Column::Boolean(v.iter().map(|x| x == "true").collect()),
        }
    }

    const FAMILIES: [(&str, DataType, &[&str]); 5] = [
        ("int64", DataType::INT64, &["ts_2diff", "rle", "plain"]),
        ("int32", DataType::INT32, &["ts_2diff", "rle", "plain"]),
        ("double", DataType::DOUBLE, &["gorilla", "plain"]),
        ("float", DataType::FLOAT, &["gorilla", "plain"]),
        ("boolean", DataType::BOOLEAN, &["rle", "plain"]),
    ];

    /// Whether SNAPPY pays, on every series of the Java 0.10 writer's golden files of the
    /// encodings [`choose`] takes: each file is written twice by Java, UNCOMPRESSED and SNAPPY,
    /// from the same points; the choice among that one encoding is the compression whose
    /// Java-written chunks are smaller, wherever one beats the other by at least 10% (the chunks
    /// also hold the time column and page headers, which the choice leaves out).
    #[test]
    fn snappy_is_chosen_where_it_shrinks_the_java_chunks() {
        let (mut checked, mut snappy) = (0, 0);
        for (t, dt, encodings) in FAMILIES {
            for e in encodings {
                let (series, plain) = golden(&format!("enc_{t}_{e}_uncompressed"));
                let (same, z) = golden(&format!("enc_{t}_{e}_snappy"));
                assert_eq!(series, same, "{t} {e}: the same points in both files");
                let enc: Encoding = e.to_uppercase().parse().unwrap();
                for (m, v) in series {
                    let (u, c) = (plain[&m], z[&m]);
                    let want = if c * 10 <= u * 9 {
                        Compression::SNAPPY
                    } else if u * 10 <= c * 9 {
                        Compression::UNCOMPRESSED
                    } else {
                        continue;
                    };
                    let start = SeriesType::default_for(dt);
                    let got = choose_among(start, &parse(dt, &v), &[enc]);
                    assert_eq!(
                        (got.encoding, got.compression),
                        (enc, want),
                        "{t} {e} {m}: Java {u} bytes uncompressed, {c} SNAPPY"
                    );
                    checked += 1;
                    snappy += usize::from(want == Compression::SNAPPY);
                }
            }
        }
        // Enough series. (Where Java's SNAPPY chunks are larger, it is by less than 10%: the
        // opposite decision is checked by hand in `by_hand_the_smallest_encoding_wins`.)
        assert!(checked >= 20, "{checked}");
        assert!(snappy > 0, "{snappy} of {checked}");
    }

    /// A series is chosen once it has a flush of at least MIN_SAMPLE points; the choice is
    /// journaled, wins over the series' first line when the journal is loaded, and is kept
    /// (no second choice after a restart, whatever the later points).
    #[test]
    fn the_choice_is_journaled_and_kept_across_restarts() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("schema.tsv");
        let defaults = TypeDefaults {
            choose: true,
            ..TypeDefaults::default()
        };
        let ramp = Column::Int64((0..256).map(|i| 1000 + 7 * i).collect());
        {
            let mut r = Registry::open(tsfiled_fsio::std_fs(), &path, vec![]).unwrap();
            r.set_rules(vec![], defaults);
            let s = r.resolve("root.sg.d1", "a", &FieldValue::Int(5));
            assert_eq!(s.ty, SeriesType::default_for(DataType::INT64));
            // Too few points: the starting type, still to be chosen.
            let few = Column::Int64(vec![5; MIN_SAMPLE - 1]);
            let t = r.settle("root.sg.d1", "a", &few).unwrap();
            assert_eq!(
                (t.encoding, t.compression),
                (Encoding::TS_2DIFF, Compression::SNAPPY)
            );
            let t = r.settle("root.sg.d1", "a", &constant_ints()).unwrap();
            assert_eq!(
                (t.encoding, t.compression),
                (Encoding::RLE, Compression::UNCOMPRESSED)
            );
            // Intake keeps the starting type until the next start.
            let start = SeriesType::default_for(DataType::INT64);
            assert_eq!(r.get("root.sg.d1", "a").unwrap().ty, start);
            // Chosen once: a later flush of other values keeps it.
            assert_eq!(r.settle("root.sg.d1", "a", &ramp).unwrap(), t);
            r.sync().unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(
                text,
                "root.sg.d1\ta\tINT64\tTS_2DIFF\tSNAPPY\nroot.sg.d1\ta\tINT64\tRLE\tUNCOMPRESSED\n"
            );
            // A rewrite from memory keeps the choice (one line).
            r.broken = true;
            r.dirty = true;
            r.sync().unwrap();
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                "root.sg.d1\ta\tINT64\tRLE\tUNCOMPRESSED\n"
            );
            // The journal as appended before the rewrite, for the reload below.
            std::fs::write(&path, text).unwrap();
        }
        let mut r = Registry::open(tsfiled_fsio::std_fs(), &path, vec![]).unwrap();
        r.set_rules(vec![], defaults);
        assert_eq!(r.len(), 1);
        let want = SeriesType {
            data_type: DataType::INT64,
            encoding: Encoding::RLE,
            compression: Compression::UNCOMPRESSED,
        };
        assert_eq!(r.get("root.sg.d1", "a").unwrap().ty, want);
        assert_eq!(r.settle("root.sg.d1", "a", &ramp).unwrap(), want);
        // A rewrite from memory keeps the choice (one line).
        r.broken = true;
        r.dirty = true;
        r.sync().unwrap();
        let r = Registry::open(tsfiled_fsio::std_fs(), &path, vec![]).unwrap();
        assert_eq!(r.get("root.sg.d1", "a").unwrap().ty, want);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "root.sg.d1\ta\tINT64\tRLE\tUNCOMPRESSED\n"
        );
    }

    /// A series a rule matches keeps the rule's encoding and compression, and nothing is
    /// chosen when the defaults do not choose; a series not known is `None`.
    #[test]
    fn rules_and_defaults_that_do_not_choose_win() {
        let rule = SchemaRule {
            pattern: PathPattern::parse("root.sg.*.pinned").unwrap(),
            data_type: None,
            encoding: Some(Encoding::PLAIN),
            compression: Some(Compression::SNAPPY),
        };
        let mut r = chooser(vec![rule]);
        r.resolve("root.sg.d1", "pinned", &FieldValue::Int(5));
        r.resolve("root.sg.d1", "free", &FieldValue::Int(5));
        let t = r.settle("root.sg.d1", "pinned", &constant_ints()).unwrap();
        assert_eq!(
            (t.encoding, t.compression),
            (Encoding::PLAIN, Compression::SNAPPY)
        );
        let t = r.settle("root.sg.d1", "free", &constant_ints()).unwrap();
        assert_eq!(t.encoding, Encoding::RLE);
        assert!(r.settle("root.sg.d1", "other", &constant_ints()).is_none());
        assert!(r.settle("root.sg.d9", "free", &constant_ints()).is_none());
        // Defaults that do not choose.
        let mut r = Registry::in_memory(vec![]);
        r.resolve("root.sg.d1", "free", &FieldValue::Int(5));
        let t = r.settle("root.sg.d1", "free", &constant_ints()).unwrap();
        assert_eq!(t, SeriesType::default_for(DataType::INT64));
        // A series known from the journal (not defined in this run) is not chosen again.
        let mut r = chooser(vec![]);
        r.insert(
            "root.sg.d1",
            "old",
            SeriesType::default_for(DataType::INT64),
        );
        let t = r.settle("root.sg.d1", "old", &constant_ints()).unwrap();
        assert_eq!(t.encoding, Encoding::TS_2DIFF);
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;

    /// A table's columns (TAG and FIELD, first-seen order) and FIELD types survive a reopen of
    /// the journal and a rewrite of it from memory.
    #[test]
    fn table_columns_are_journaled_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("schema.tsv");
        let owner = "lp\u{1f}cpu";
        let device = "lp\u{1f}cpu\u{1e}gw1";
        let want = vec![
            ("host", true),
            ("usage", false),
            ("core", true),
            ("state", false),
        ];
        let check = |r: &Registry| {
            let got: Vec<(&str, bool)> = r
                .table_columns(owner)
                .iter()
                .map(|(c, t)| (&**c, *t))
                .collect();
            assert_eq!(got, want);
            assert_eq!(
                r.get(device, "usage").unwrap().ty.data_type,
                DataType::DOUBLE
            );
            assert_eq!(r.get(device, "state").unwrap().ty.data_type, DataType::TEXT);
            assert_eq!(&*r.get(device, "state").unwrap().device, device);
            assert_eq!(r.len(), 2, "TAG columns are not series");
        };
        {
            let mut r = Registry::open(tsfiled_fsio::std_fs(), &path, vec![]).unwrap();
            r.define_tags(owner, &["host"]).unwrap();
            r.define(device, "usage", SeriesType::default_for(DataType::DOUBLE));
            r.define_tags(owner, &["core", "host"]).unwrap();
            r.define(device, "state", SeriesType::default_for(DataType::TEXT));
            r.sync().unwrap();
            check(&r);
        }
        let mut r = Registry::open(tsfiled_fsio::std_fs(), &path, vec![]).unwrap();
        check(&r);
        r.broken = true;
        r.dirty = true;
        r.sync().unwrap();
        let r = Registry::open(tsfiled_fsio::std_fs(), &path, vec![]).unwrap();
        check(&r);
    }
}
