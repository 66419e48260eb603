//! The table model of v4 (IoTDB 2.x tables): a table schema stored in the file metadata,
//! and one aligned chunk group per device, a device being the table name followed by
//! its tag values (see `docs/tsfile-v4.md`, "Table model").

use super::metadata::DeviceId;
use super::reader::TsFileReaderV4;
use super::writer::{AlignedColumn, TsFileWriterV4};
use super::{TIME_COLUMN_MASK, VALUE_COLUMN_MASK, VECTOR_TYPE};
use crate::basic::{Compression, DataType, Encoding, Value};
use crate::errors::{Error, Result};
use crate::file::properties::MeasurementSchema;
use crate::util::io::{self, ByteReader};
use std::collections::BTreeMap;
use std::io::Write;

/// What a table column is (`ColumnCategory`; stored as an `i32`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnCategory {
    /// A tag: part of the device id, not stored as a chunk.
    Tag,
    /// A field: an aligned value column.
    Field,
    /// An attribute: kept by IoTDB outside the file; listed in a schema only.
    Attribute,
    /// The time column's name (the C++ library's tables may name it).
    Time,
}

impl ColumnCategory {
    /// The stored code.
    pub fn code(self) -> i32 {
        match self {
            ColumnCategory::Tag => 0,
            ColumnCategory::Field => 1,
            ColumnCategory::Attribute => 2,
            ColumnCategory::Time => 3,
        }
    }

    /// The category of a stored code.
    pub fn from_code(code: i32) -> Option<Self> {
        Some(match code {
            0 => ColumnCategory::Tag,
            1 => ColumnCategory::Field,
            2 => ColumnCategory::Attribute,
            3 => ColumnCategory::Time,
            _ => return None,
        })
    }

    /// The upper-case name (`TAG`, `FIELD`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ColumnCategory::Tag => "TAG",
            ColumnCategory::Field => "FIELD",
            ColumnCategory::Attribute => "ATTRIBUTE",
            ColumnCategory::Time => "TIME",
        }
    }
}

/// One column of a table schema.
#[derive(Debug, Clone, PartialEq)]
pub struct TableColumn {
    /// Name, type, encoding and compression (a TAG column is STRING, PLAIN, UNCOMPRESSED).
    pub schema: MeasurementSchema,
    /// Its category.
    pub category: ColumnCategory,
}

impl TableColumn {
    /// A TAG column (STRING).
    pub fn tag(name: &str) -> Self {
        TableColumn {
            schema: MeasurementSchema::new(
                name,
                DataType::STRING,
                Encoding::PLAIN,
                Compression::UNCOMPRESSED,
            ),
            category: ColumnCategory::Tag,
        }
    }

    /// A FIELD column.
    pub fn field(schema: MeasurementSchema) -> Self {
        TableColumn {
            schema,
            category: ColumnCategory::Field,
        }
    }
}

/// A table schema (`TableSchema`): the name and its columns in order.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    /// Table name (lower case, as IoTDB stores it).
    pub name: String,
    /// Columns in schema order.
    pub columns: Vec<TableColumn>,
}

fn check_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(format!("empty {what} name")));
    }
    if name.chars().any(|c| c.is_uppercase()) {
        return Err(Error::invalid(format!(
            "{what} name {name:?} has upper-case letters; IoTDB's table model stores names in lower case"
        )));
    }
    Ok(())
}

impl TableSchema {
    /// A checked schema: lower-case non-empty unique names, TAG columns STRING or TEXT.
    pub fn new(name: &str, columns: Vec<TableColumn>) -> Result<Self> {
        check_name("table", name)?;
        for (i, c) in columns.iter().enumerate() {
            let n = &c.schema.measurement;
            check_name("column", n)?;
            if columns[..i].iter().any(|o| &o.schema.measurement == n) {
                return Err(Error::invalid(format!("table {name}: column {n} twice")));
            }
            if c.category == ColumnCategory::Tag
                && !matches!(c.schema.data_type, DataType::STRING | DataType::TEXT)
            {
                return Err(Error::invalid(format!(
                    "table {name}: TAG column {n} must be STRING or TEXT, found {}",
                    c.schema.data_type
                )));
            }
            if c.category == ColumnCategory::Field {
                super::writer::validate_schema(&c.schema)?;
            }
        }
        Ok(TableSchema {
            name: name.to_string(),
            columns,
        })
    }

    /// The TAG columns in order (their order is the device id's).
    pub fn tags(&self) -> impl Iterator<Item = &TableColumn> {
        self.columns
            .iter()
            .filter(|c| c.category == ColumnCategory::Tag)
    }

    /// The FIELD columns in order.
    pub fn fields(&self) -> impl Iterator<Item = &TableColumn> {
        self.columns
            .iter()
            .filter(|c| c.category == ColumnCategory::Field)
    }

    /// Appends the stored form (the name is stored by the caller, as the map key):
    /// uvarint column count, then per column the measurement schema (`i32`-length name,
    /// type, encoding, compression as `u8`, `i32` property count 0) and the `i32` category.
    pub fn serialize(&self, out: &mut Vec<u8>) {
        io::put_uvarint(out, self.columns.len() as u32);
        for c in &self.columns {
            let s = &c.schema;
            io::put_i32(out, s.measurement.len() as i32);
            out.extend_from_slice(s.measurement.as_bytes());
            out.push(s.data_type.code() as u8);
            out.push(s.encoding.code() as u8);
            out.push(s.compression.code() as u8);
            io::put_i32(out, 0);
            io::put_i32(out, c.category.code());
        }
    }

    /// Reads a stored schema of table `name`. Names are kept as stored.
    pub fn deserialize(r: &mut ByteReader<'_>, name: String) -> Result<Self> {
        let at = r.offset();
        let n = r.read_uvarint("table column count")? as usize;
        if n > r.remaining() {
            return Err(Error::format(
                at,
                format_args!("table {name}: at most {} columns, found {n}", r.remaining()),
            ));
        }
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            let col = bin_string(r, "table column name")?;
            let c_at = r.offset();
            let t = r.read_u8("table column data type")?;
            let e = r.read_u8("table column encoding")?;
            let z = r.read_u8("table column compression")?;
            let data_type = DataType::from_code(t as i16).ok_or_else(|| {
                Error::format(
                    c_at,
                    format_args!("table {name}.{col}: a data type, found {t}"),
                )
            })?;
            let encoding = Encoding::from_code(e as i16).ok_or_else(|| {
                Error::format(
                    c_at + 1,
                    format_args!("table {name}.{col}: an encoding, found {e}"),
                )
            })?;
            let compression = Compression::from_code(z as i16).ok_or_else(|| {
                Error::format(
                    c_at + 2,
                    format_args!("table {name}.{col}: a compression, found {z}"),
                )
            })?;
            let p_at = r.offset();
            let props = r.read_i32("table column property count")?;
            if props < 0 || props as usize > r.remaining() {
                return Err(Error::format(
                    p_at,
                    format_args!("table {name}.{col}: a property count, found {props}"),
                ));
            }
            for _ in 0..props {
                bin_string(r, "table column property key")?;
                bin_string(r, "table column property value")?;
            }
            let k_at = r.offset();
            let k = r.read_i32("table column category")?;
            let category = ColumnCategory::from_code(k).ok_or_else(|| {
                Error::format(
                    k_at,
                    format_args!("table {name}.{col}: a column category 0..=3, found {k}"),
                )
            })?;
            columns.push(TableColumn {
                schema: MeasurementSchema::new(&col, data_type, encoding, compression),
                category,
            });
        }
        Ok(TableSchema { name, columns })
    }
}

/// An `i32`-length UTF-8 string (`ReadWriteIOUtils.write(String)`, C++ `write_str`).
fn bin_string(r: &mut ByteReader<'_>, what: &str) -> Result<String> {
    let at = r.offset();
    let n = r.read_i32(what)?;
    if n < 0 || n as usize > r.remaining() {
        return Err(Error::format(
            at,
            format_args!("{what}: a length in 0..={}, found {n}", r.remaining()),
        ));
    }
    String::from_utf8(r.take(n as usize, what)?.to_vec())
        .map_err(|_| Error::format(at, format_args!("{what}: valid UTF-8")))
}

/// One row of a table as read back: tag values, time, field values (schema order).
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    /// Tag values in TAG column order; `None` is null.
    pub tags: Vec<Option<String>>,
    /// The row's time.
    pub time: i64,
    /// Field values in FIELD column order; `None` is null.
    pub fields: Vec<Option<Value>>,
}

impl<W: Write> TsFileWriterV4<W> {
    /// Declares a table, before its rows are written; its schema is stored in the file
    /// metadata. Declaring it again may append columns (new tags or fields seen later):
    /// the declared columns must stay a prefix of the new ones, unchanged. A device
    /// written before a TAG column was appended reads that tag as null (its stored id is
    /// shorter, which is the same device id as with trailing nulls).
    pub fn add_table(&mut self, schema: TableSchema) -> Result<()> {
        if let Some(old) = self.tables.get(&schema.name) {
            let kept = old.columns.len() <= schema.columns.len()
                && old.columns.iter().zip(&schema.columns).all(|(a, b)| a == b);
            if !kept {
                return Err(Error::invalid(format!(
                    "table {}: a new declaration may only append columns to the declared ones",
                    schema.name
                )));
            }
        }
        self.tables.insert(schema.name.clone(), schema);
        Ok(())
    }

    /// Writes one chunk group of the device `tags` of table `table` (tag values in TAG
    /// column order, `None` null): the rows' times and a value or null per row of some of
    /// the table's FIELD columns (each named and typed as in the schema).
    pub fn write_table_chunk_group(
        &mut self,
        table: &str,
        tags: &[Option<&str>],
        times: &[i64],
        fields: &[AlignedColumn<'_>],
    ) -> Result<()> {
        let schema = self
            .tables
            .get(table)
            .ok_or_else(|| Error::invalid(format!("table {table} is not declared")))?;
        let n_tags = schema.tags().count();
        if tags.len() != n_tags {
            return Err(Error::invalid(format!(
                "table {table}: {n_tags} tag values expected, found {}",
                tags.len()
            )));
        }
        for f in fields {
            let m = &f.schema.measurement;
            match schema.fields().find(|c| &c.schema.measurement == m) {
                None => {
                    return Err(Error::invalid(format!(
                        "table {table} has no FIELD column {m}"
                    )))
                }
                Some(c) if c.schema.data_type != f.schema.data_type => {
                    return Err(Error::invalid(format!(
                        "table {table}.{m} is {}, found a {} column",
                        c.schema.data_type, f.schema.data_type
                    )))
                }
                Some(_) => {}
            }
        }
        let dev = DeviceId::from_table(table, tags);
        self.write_aligned_device(dev, times, fields)
    }
}

impl TsFileReaderV4 {
    /// The table schemas stored in the file (empty for a tree-model file).
    pub fn table_schemas(&self) -> &[TableSchema] {
        &self.metadata().table_schemas
    }

    /// Every row of table `name`: devices in index order, rows in time order per device.
    /// A time present in the time column with every field null is a row of nulls.
    pub fn table_rows(&self, name: &str) -> Result<Vec<TableRow>> {
        let schema = self
            .table_schemas()
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| Error::invalid(format!("the file has no table {name}")))?;
        let n_tags = schema.tags().count();
        let fields: Vec<&TableColumn> = schema.fields().collect();
        let mut out = Vec::new();
        for dev in self.devices()? {
            if dev.device.table() != name {
                continue;
            }
            let time_series = dev
                .series
                .iter()
                .find(|s| s.type_code == VECTOR_TYPE || s.mask() & TIME_COLUMN_MASK != 0)
                .ok_or_else(|| {
                    Error::format(
                        dev.series.first().map_or(0, |s| s.offset),
                        format_args!("a time column for device {}", dev.device.path()),
                    )
                })?;
            let mut rows: BTreeMap<i64, Vec<Option<Value>>> = BTreeMap::new();
            for (off, _) in &time_series.chunks {
                for p in self.chunk_pages(*off)?.1 {
                    for t in p.times {
                        rows.entry(t).or_insert_with(|| vec![None; fields.len()]);
                    }
                }
            }
            for s in dev.series.iter().filter(|s| s.type_code != VECTOR_TYPE) {
                let Some(i) = fields
                    .iter()
                    .position(|c| c.schema.measurement == s.measurement)
                else {
                    continue; // a column not in the schema: not part of the table's rows
                };
                // The C++ writer leaves the column mask out of the timeseries metadata
                // type byte (its chunk headers carry it): every non-time series of a
                // table device is an aligned value column.
                let mut s = s.clone();
                s.ts_type = (s.ts_type & !TIME_COLUMN_MASK) | VALUE_COLUMN_MASK;
                for (t, v) in self.series_points(&s, Some(time_series))? {
                    if let Some(row) = rows.get_mut(&t) {
                        row[i] = Some(v);
                    }
                }
            }
            let tags: Vec<Option<String>> = dev
                .device
                .tags(n_tags)
                .into_iter()
                .map(|t| t.map(str::to_string))
                .collect();
            for (time, fields) in rows {
                out.push(TableRow {
                    tags: tags.clone(),
                    time,
                    fields,
                });
            }
        }
        Ok(out)
    }
}

/// Writes the canonical table dump of every table of `r` (by name): a line
/// `#table NAME COL:CATEGORY:TYPE...` (TAG and FIELD columns in schema order), then one
/// line per row `NAME TIME TAGS... FIELDS...`, tab-separated, values as the point dump
/// writes them, null as `\N`, rows sorted by their bytes.
pub fn dump_tables(r: &TsFileReaderV4, out: &mut impl Write) -> Result<()> {
    use crate::tools::dump::value_text_v4;
    use crate::tools::javafmt::escape_text;
    let mut schemas: Vec<&TableSchema> = r.table_schemas().iter().collect();
    schemas.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    for t in schemas {
        let name = escape_text(t.name.as_bytes());
        let mut head = format!("#table\t{name}");
        for c in t
            .columns
            .iter()
            .filter(|c| matches!(c.category, ColumnCategory::Tag | ColumnCategory::Field))
        {
            head.push_str(&format!(
                "\t{}:{}:{}",
                escape_text(c.schema.measurement.as_bytes()),
                c.category.name(),
                c.schema.data_type.name()
            ));
        }
        writeln!(out, "{head}")?;
        let types: Vec<DataType> = t.fields().map(|c| c.schema.data_type).collect();
        let mut lines: Vec<String> = r
            .table_rows(&t.name)?
            .into_iter()
            .map(|row| {
                let mut l = format!("{name}\t{}", row.time);
                for tag in &row.tags {
                    l.push('\t');
                    match tag {
                        Some(s) => l.push_str(&escape_text(s.as_bytes())),
                        None => l.push_str("\\N"),
                    }
                }
                for (v, dt) in row.fields.iter().zip(&types) {
                    l.push('\t');
                    match v {
                        Some(v) => l.push_str(&value_text_v4(*dt, v)),
                        None => l.push_str("\\N"),
                    }
                }
                l
            })
            .collect();
        lines.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for l in lines {
            writeln!(out, "{l}")?;
        }
    }
    Ok(())
}
