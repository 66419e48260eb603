//! Line protocol in IoTDB 2.x's table model (`storage.line_protocol_model = "table"`): how a
//! line becomes a row of a table, and the device keys the engine files table rows under.
//!
//! The semantics are IoTDB 2.x's, read from its source (`iotdb-core/datanode`, package
//! `org.apache.iotdb.db.protocol.mqtt`: `LinePayloadFormatter`, `MPPPublishHandler`,
//! `TableMessage`; the table model's insert path behind `InsertTabletStatement`; Apache
//! TsFile's `StringArrayDeviceID`):
//! - the database is the source's `path_prefix` level below `root` (IoTDB's MQTT handler takes
//!   the topic's first level; both lower-case it);
//! - a line's measurement is its table; its tags are TAG columns (STRING), its fields FIELD
//!   columns; IoTDB's table model stores table and column names in lower case;
//! - a table's columns keep the order they were first seen in (IoTDB creates a table from its
//!   first insert and appends the columns later inserts bring); the TAG columns' order is the
//!   device id's, so it is journaled (`schema.tsv`, synced before the line's write-ahead
//!   record is written) and never changes;
//! - the device id is the table name, then the row's tag values in TAG column order, a tag the
//!   line lacks being null and trailing nulls dropped (`StringArrayDeviceID`); a tag value
//!   `null` is null, as IoTDB's line formatter reads it;
//! - field types as IoTDB's line formatter gives them (`"..."` TEXT, `t`/`true`/`f`/`false`
//!   BOOLEAN, `i`/`u` suffix INT64, other numbers DOUBLE) — the parser declares the first
//!   three, other numbers take `schema_defaults.float_type` (DOUBLE unless configured).
//!
//! Where the daemon differs: IoTDB's MQTT line formatter drops a line without tags (its
//! `setTags` refuses an empty tag set), while the table model itself takes rows whose TAG
//! columns are all null (device id: the table name alone); the daemon keeps such lines. It
//! does not read IoTDB's formatter extensions (`1.5f` FLOAT, `1i32` INT32, an attribute set
//! between tags and fields), which are not InfluxDB line protocol.
//!
//! Engine device keys: `<database>` followed by the device id's
//! [`DeviceId::key`](tsfile::file::v4::DeviceId::key) (which starts with U+001F), so the
//! storage group of a table device is its database. A table is known to the schema registry
//! as `<database>` U+001F `<table>` (its "owner"), its FIELD columns as that owner's series.

use std::sync::Arc;

use tsfile::file::v4::metadata::{NULL_TAG_MARK, TABLE_KEY_MARK, TAG_MARK};
use tsfile::file::v4::DeviceId;
use tsfiled_connectors::path::validate_measurement;
use tsfiled_connectors::TableLine;

use super::schema::Registry;

/// Whether `device` is a table device's engine key (or a table's owner key).
pub fn is_table_key(device: &str) -> bool {
    device.contains(TABLE_KEY_MARK)
}

/// The database of a table device key.
pub fn database(key: &str) -> Option<&str> {
    key.split_once(TABLE_KEY_MARK).map(|(db, _)| db)
}

/// The owner (`<database>` U+001F `<table>`) of a table device key: the key up to its first tag.
pub fn owner(key: &str) -> Option<&str> {
    let (db, rest) = key.split_once(TABLE_KEY_MARK)?;
    let end = rest.find([TAG_MARK, NULL_TAG_MARK]).unwrap_or(rest.len());
    Some(&key[..db.len() + TABLE_KEY_MARK.len_utf8() + end])
}

/// The database and device id of a table device key.
pub fn device_id(key: &str) -> Option<(&str, DeviceId)> {
    let i = key.find(TABLE_KEY_MARK)?;
    Some((&key[..i], DeviceId::from_key(&key[i..])))
}

/// The key a `.resource` stores for a device key: a table device's without its database
/// (the file's directory names it), a tree device's unchanged.
pub fn resource_key(key: &str) -> &str {
    key.find(TABLE_KEY_MARK).map_or(key, |i| &key[i..])
}

/// The engine key of a device key read from a `.resource` of storage group `sg`.
pub fn from_resource_key(sg: &str, key: String) -> String {
    if key.starts_with(TABLE_KEY_MARK) {
        format!("{sg}{key}")
    } else {
        key
    }
}

/// The rule path of a table's FIELD column owner: `root.<database>.<table>`, so that schema
/// rules (`root.lp.cpu.usage`) apply to tables too.
pub fn rule_device(owner: &str) -> Option<String> {
    let (db, table) = owner.split_once(TABLE_KEY_MARK)?;
    Some(format!("root.{db}.{table}"))
}

/// Maps a line (a table-mode record's device, [`TableLine`]) onto its table: checks and
/// lower-cases the names, defines the tags the table does not have yet (journaled and synced
/// at once), and returns the device's engine key. Err: why the line is refused.
pub fn map_line(reg: &mut Registry, line: &TableLine<'_>) -> Result<Arc<str>, String> {
    if line.database.is_empty() {
        return Err("no database (the source's path_prefix)".to_string());
    }
    let table = line.table.to_lowercase();
    validate_measurement(&table).map_err(|e| format!("table name {table:?} {e}"))?;
    let mut tags: Vec<(String, Option<&str>)> = Vec::with_capacity(line.tags.len());
    for (k, v) in &line.tags {
        let k = k.to_lowercase();
        validate_measurement(&k).map_err(|e| format!("tag key {k:?} {e}"))?;
        if tags.iter().any(|(o, _)| *o == k) {
            return Err(format!(
                "tag {k:?} twice (table and column names are lower case in IoTDB's table model)"
            ));
        }
        tags.push((k, (*v != "null").then_some(*v)));
    }
    let owner = format!("{}{TABLE_KEY_MARK}{table}", line.database);
    let columns = reg.table_columns(&owner);
    if let Some((k, _)) = tags
        .iter()
        .find(|(k, _)| columns.iter().any(|(c, tag)| !tag && **c == **k))
    {
        return Err(format!("tag {k:?} is a FIELD column of table {table}"));
    }
    let new: Vec<&str> = tags
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !columns.iter().any(|(c, _)| &**c == *k))
        .collect();
    if !new.is_empty() {
        reg.define_tags(&owner, &new)
            .map_err(|e| format!("the schema journal could not keep the new tags: {e}"))?;
    }
    let values: Vec<Option<&str>> = reg
        .table_columns(&owner)
        .iter()
        .filter(|(_, tag)| *tag)
        .map(|(c, _)| tags.iter().find(|(k, _)| **k == **c).and_then(|(_, v)| *v))
        .collect();
    let id = DeviceId::from_table(&table, &values);
    Ok(Arc::from(format!("{}{}", line.database, id.key())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::schema::Registry;

    fn line<'a>(table: &'a str, tags: &[(&'a str, &'a str)]) -> TableLine<'a> {
        TableLine {
            database: "lp",
            table,
            tags: tags.to_vec(),
        }
    }

    /// TAG columns keep their first-seen order; a line's tags map onto it whatever their order
    /// in the line, a missing tag is null, trailing nulls are dropped, `null` is null.
    #[test]
    fn tags_map_onto_the_first_seen_order() {
        let mut reg = Registry::in_memory(vec![]);
        let k = map_line(&mut reg, &line("CPU", &[("Host", "gw1"), ("core", "0")])).unwrap();
        assert_eq!(&*k, "lp\u{1f}cpu\u{1e}gw1\u{1e}0");
        let k = map_line(&mut reg, &line("cpu", &[("core", "1"), ("host", "gw2")])).unwrap();
        assert_eq!(&*k, "lp\u{1f}cpu\u{1e}gw2\u{1e}1");
        let k = map_line(&mut reg, &line("cpu", &[("rack", "r1")])).unwrap();
        assert_eq!(&*k, "lp\u{1f}cpu\u{1d}\u{1d}\u{1e}r1");
        let k = map_line(&mut reg, &line("cpu", &[("host", "gw1"), ("core", "null")])).unwrap();
        assert_eq!(&*k, "lp\u{1f}cpu\u{1e}gw1");
        let k = map_line(&mut reg, &line("cpu", &[])).unwrap();
        assert_eq!(&*k, "lp\u{1f}cpu");
        let names: Vec<(&str, bool)> = reg
            .table_columns("lp\u{1f}cpu")
            .iter()
            .map(|(n, t)| (&**n, *t))
            .collect();
        assert_eq!(names, vec![("host", true), ("core", true), ("rack", true)]);
        assert_eq!(owner(&k), Some("lp\u{1f}cpu"));
        assert_eq!(owner("lp\u{1f}cpu\u{1d}\u{1e}x"), Some("lp\u{1f}cpu"));
        let (db, id) = device_id("lp\u{1f}cpu\u{1d}\u{1e}x").unwrap();
        assert_eq!(db, "lp");
        assert_eq!(id, DeviceId::from_table("cpu", &[None, Some("x")]));
        assert!(map_line(&mut reg, &line("cpu", &[("a", "1"), ("A", "2")])).is_err());
        assert!(map_line(&mut reg, &line("a b", &[])).is_err());
    }
}
