//! Interned device and measurement names, shared by the records of many payloads.
//!
//! A stream of messages usually repeats the same few devices and measurements. [`Names`]
//! keeps one validated [`Arc<str>`] per name, so a parser that sees a known name neither
//! validates it again nor allocates for it, and every record of the stream shares one string
//! per name (the pipeline then finds a series by comparing pointers). Only valid names are
//! kept, and at most [`Names::limit`] of each kind: when a set is full it is emptied and fills
//! again with the names in use (a stream of ever new names costs what it cost without the
//! cache). Payloads of one stream usually also repeat their names in the same places: the
//! devices returned lately (up to 16) and the measurement last seen at each position are
//! compared first, which costs less than hashing; and a parser may keep a whole list of
//! measurements under its raw text ([`Names::list`]), so that the same text next time costs one
//! comparison.

use std::collections::HashSet;
use std::sync::Arc;

use crate::path::{validate_device, validate_measurement};

/// Names kept of each kind (devices, measurements) by [`Names::default`].
pub const DEFAULT_NAME_LIMIT: usize = 65_536;

/// Validated device and measurement names, interned (see the module docs).
#[derive(Debug)]
pub struct Names {
    devices: HashSet<Arc<str>>,
    measurements: HashSet<Arc<str>>,
    limit: usize,
    /// Devices returned lately (at most [`RECENT_DEVICES`]), replaced in turn.
    recent_devices: Vec<Arc<str>>,
    /// The entry of `recent_devices` the next new device replaces once it is full.
    next_recent: usize,
    /// The entry of `recent_devices` found last.
    found_recent: usize,
    /// The measurement last returned for each position of [`Names::measurement_at`].
    last_at: Vec<Arc<str>>,
    /// The raw text of the list kept by [`Names::keep_list`], and its names.
    list_text: Vec<u8>,
    list: Vec<Arc<str>>,
}

/// Devices [`Names::device`] compares before hashing: a stream cycling through up to this
/// many devices finds each by comparing a few strings.
const RECENT_DEVICES: usize = 16;

/// The longest raw text of a list [`Names::keep_list`] keeps.
const MAX_LIST_TEXT: usize = 64 * 1024;

impl Default for Names {
    fn default() -> Self {
        Names::with_limit(DEFAULT_NAME_LIMIT)
    }
}

/// The interned `name`, or `None` when it is new.
fn interned(set: &HashSet<Arc<str>>, name: &str) -> Option<Arc<str>> {
    set.get(name).cloned()
}

/// Adds `name` to `set` (emptied first when it holds `limit` names).
fn intern(set: &mut HashSet<Arc<str>>, limit: usize, name: &str) -> Arc<str> {
    if set.len() >= limit {
        set.clear();
    }
    let name: Arc<str> = Arc::from(name);
    set.insert(name.clone());
    name
}

impl Names {
    /// An empty cache keeping at most `limit` names of each kind (at least one).
    pub fn with_limit(limit: usize) -> Names {
        Names {
            devices: HashSet::new(),
            measurements: HashSet::new(),
            limit: limit.max(1),
            recent_devices: Vec::new(),
            next_recent: 0,
            found_recent: 0,
            last_at: Vec::new(),
            list_text: Vec::new(),
            list: Vec::new(),
        }
    }

    /// The most names of each kind kept.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Names held now (devices and measurements).
    pub fn len(&self) -> usize {
        self.devices.len() + self.measurements.len()
    }

    /// Whether no name is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device path `path` as a shared string, or why it is not a valid device path
    /// ([`validate_device`]).
    pub fn device(&mut self, path: &str) -> Result<Arc<str>, tsfiled_core::Error> {
        if let Some(d) = self.recent_device(path.as_bytes()) {
            return Ok(d);
        }
        let d = match interned(&self.devices, path) {
            Some(d) => d,
            None => {
                validate_device(path)?;
                intern(&mut self.devices, self.limit, path)
            }
        };
        if self.recent_devices.len() < RECENT_DEVICES {
            self.recent_devices.push(d.clone());
        } else {
            self.recent_devices[self.next_recent] = d.clone();
            self.next_recent = (self.next_recent + 1) % RECENT_DEVICES;
        }
        Ok(d)
    }

    /// [`Names::device`] for a path given as bytes: a device returned lately is found without
    /// checking that the bytes are UTF-8. `None`: not UTF-8, or not a valid device path.
    pub fn device_bytes(&mut self, path: &[u8]) -> Option<Arc<str>> {
        match self.recent_device(path) {
            Some(d) => Some(d),
            None => self.device(std::str::from_utf8(path).ok()?).ok(),
        }
    }

    /// The device returned lately whose path is `path`: the one after the device found last
    /// is compared first (a stream that cycles through its devices finds each at once).
    fn recent_device(&mut self, path: &[u8]) -> Option<Arc<str>> {
        let n = self.recent_devices.len();
        let from = self.found_recent + 1;
        for k in from..from + n {
            let at = if k >= n { k - n } else { k };
            if self.recent_devices[at].as_bytes() == path {
                self.found_recent = at;
                return Some(self.recent_devices[at].clone());
            }
        }
        None
    }

    /// The measurement name `name` as a shared string, or why it is not a valid measurement
    /// ([`validate_measurement`]).
    pub fn measurement(&mut self, name: &str) -> Result<Arc<str>, tsfiled_core::Error> {
        if let Some(m) = interned(&self.measurements, name) {
            return Ok(m);
        }
        validate_measurement(name)?;
        Ok(intern(&mut self.measurements, self.limit, name))
    }

    /// [`Names::measurement`] for the measurement at position `k` of a payload's list (the
    /// name there last time is tried first).
    pub fn measurement_at(
        &mut self,
        k: usize,
        name: &str,
    ) -> Result<Arc<str>, tsfiled_core::Error> {
        if let Some(m) = self.last_at.get(k).filter(|m| ***m == *name) {
            return Ok(m.clone());
        }
        let m = self.measurement(name)?;
        let known = self.last_at.len();
        if k < known {
            self.last_at[k] = m.clone();
        } else if k == known && k < self.limit {
            // Positions are remembered in order, up to the set's limit.
            self.last_at.push(m.clone());
        }
        Ok(m)
    }

    /// The names kept with [`Names::keep_list`] if `text` is the raw text they were kept
    /// under.
    pub fn list(&self, text: &[u8]) -> Option<&[Arc<str>]> {
        (self.list_text == text).then_some(&self.list[..])
    }

    /// The names kept with [`Names::keep_list`], those of the text [`Names::list_text`]
    /// (empty when none is).
    pub fn list_names(&self) -> &[Arc<str>] {
        &self.list
    }

    /// The raw text of the list kept with [`Names::keep_list`] (empty when none is).
    pub fn list_text(&self) -> &[u8] {
        &self.list_text
    }

    /// Keeps `names`, the valid measurements a parser read from the raw text `text` (a text of
    /// more than 64 KiB is not kept).
    pub fn keep_list(&mut self, text: &[u8], names: Vec<Arc<str>>) {
        self.list_text.clear();
        self.list.clear();
        if text.len() <= MAX_LIST_TEXT {
            self.list_text.extend_from_slice(text);
            self.list = names;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_name_is_the_same_string() {
        let mut n = Names::default();
        let a = n.device("root.sg.d1").unwrap();
        let b = n.device(&String::from("root.sg.d1")).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*a, "root.sg.d1");
        let s = n.measurement("s1").unwrap();
        assert!(Arc::ptr_eq(&s, &n.measurement("s1").unwrap()));
        // Kinds are kept apart: a measurement spelled like a device is another entry.
        let other = n.device("root.sg.d2").unwrap();
        assert!(!Arc::ptr_eq(&a, &other));
        assert_eq!(n.len(), 3);
        assert!(!n.is_empty());
    }

    #[test]
    fn invalid_names_are_refused_and_not_kept() {
        let mut n = Names::default();
        // The errors are the path rules' own (core::path).
        assert_eq!(n.device("sg.d1"), Err(tsfiled_core::Error::NoRoot));
        assert_eq!(n.device("root"), Err(tsfiled_core::Error::TooShort));
        assert_eq!(n.measurement(""), Err(tsfiled_core::Error::Empty));
        assert!(n.measurement("time").is_err(), "reserved measurement name");
        assert!(
            n.device("root.a.time").is_ok(),
            "`time` is a valid device node"
        );
        assert!(n.measurement("a.b").is_err());
        assert_eq!(n.len(), 1);
        assert!(n.device("sg.d1").is_err(), "still refused the second time");
    }

    #[test]
    fn positions_and_the_last_device_are_remembered() {
        let mut n = Names::default();
        let s0 = n.measurement_at(0, "s0").unwrap();
        let s1 = n.measurement_at(1, "s1").unwrap();
        assert!(Arc::ptr_eq(&s0, &n.measurement_at(0, "s0").unwrap()));
        assert!(Arc::ptr_eq(&s1, &n.measurement_at(1, "s1").unwrap()));
        // Swapped places: found in the set, the same strings.
        assert!(Arc::ptr_eq(&s1, &n.measurement_at(0, "s1").unwrap()));
        assert!(Arc::ptr_eq(&s0, &n.measurement_at(1, "s0").unwrap()));
        assert!(Arc::ptr_eq(&s0, &n.measurement("s0").unwrap()));
        // A position past the remembered ones is served from the set.
        assert!(Arc::ptr_eq(&s1, &n.measurement_at(5, "s1").unwrap()));
        assert_eq!(n.len(), 2);
        // An invalid name at a remembered position is refused, and the position kept.
        assert!(n.measurement_at(0, "time").is_err());
        assert!(Arc::ptr_eq(&s1, &n.measurement_at(0, "s1").unwrap()));
        let d1 = n.device("root.a.d1").unwrap();
        let d2 = n.device("root.a.d2").unwrap();
        assert!(Arc::ptr_eq(&d2, &n.device("root.a.d2").unwrap()));
        assert!(Arc::ptr_eq(&d1, &n.device("root.a.d1").unwrap()));
        assert!(n.device("root.a.").is_err());
        assert_eq!(n.len(), 4);
    }

    /// Up to 16 devices are found among the recent ones; a 17th replaces the oldest in turn,
    /// and every device stays the same string as long as the set holds it.
    #[test]
    fn recent_devices_are_found_as_bytes_and_replaced_in_turn() {
        let mut n = Names::default();
        let paths: Vec<String> = (0..17).map(|i| format!("root.sg.d{i}")).collect();
        let first: Vec<Arc<str>> = paths.iter().map(|p| n.device(p).unwrap()).collect();
        assert_eq!(n.recent_devices.len(), 16);
        assert_eq!(
            &*n.recent_devices[0], "root.sg.d16",
            "the 17th replaced the 1st"
        );
        assert_eq!(&*n.recent_devices[1], "root.sg.d1");
        for (p, d) in paths.iter().zip(&first) {
            let again = n.device_bytes(p.as_bytes()).unwrap();
            assert!(Arc::ptr_eq(d, &again), "{p}");
        }
        // Not UTF-8, invalid paths: refused, as by `device`.
        assert_eq!(n.device_bytes(b"root.sg.\xff"), None);
        assert_eq!(n.device_bytes(b"sg.d1"), None);
        assert_eq!(n.device_bytes(b"root.sg.d1."), None);
        assert_eq!(n.recent_devices.len(), 16);
        assert_eq!(n.len(), 17);
    }

    /// Whatever the order of the lookups, each recent device is found as itself (the search
    /// starts after the device found last and wraps around).
    #[test]
    fn recent_devices_are_found_in_any_order() {
        let mut n = Names::default();
        let a = n.device("root.sg.a").unwrap();
        let b = n.device("root.sg.b").unwrap();
        let c = n.device("root.sg.c").unwrap();
        let d = n.device("root.sg.d").unwrap();
        for (path, want) in [
            ("root.sg.c", &c),
            ("root.sg.d", &d),
            ("root.sg.a", &a),
            ("root.sg.a", &a),
            ("root.sg.b", &b),
            ("root.sg.d", &d),
            ("root.sg.c", &c),
            ("root.sg.b", &b),
        ] {
            let got = n.recent_device(path.as_bytes()).expect(path);
            assert!(Arc::ptr_eq(&got, want), "{path}");
            assert_eq!(&*n.recent_devices[n.found_recent], path);
        }
        assert_eq!(n.recent_device(b"root.sg.e"), None);
        assert_eq!(n.recent_device(b"root.sg."), None);
        assert_eq!(n.len(), 4);
    }

    /// Positions are remembered only in order (the next one) and below the limit.
    #[test]
    fn positions_are_remembered_in_order_up_to_the_limit() {
        let mut n = Names::with_limit(2);
        n.measurement_at(1, "b").unwrap();
        assert!(n.last_at.is_empty(), "position 1 before position 0");
        n.measurement_at(0, "a").unwrap();
        n.measurement_at(1, "b").unwrap();
        n.measurement_at(2, "c").unwrap();
        let kept: Vec<&str> = n.last_at.iter().map(|m| &**m).collect();
        assert_eq!(kept, ["a", "b"], "position 2 is past the limit");
        n.measurement_at(1, "c").unwrap();
        let kept: Vec<&str> = n.last_at.iter().map(|m| &**m).collect();
        assert_eq!(kept, ["a", "c"]);
    }

    #[test]
    fn a_list_is_kept_under_its_text() {
        let mut n = Names::default();
        assert_eq!(n.list(b"\"a\""), None);
        // The empty list's names are none.
        assert_eq!(n.list(b""), Some(&[][..]));
        let a = n.measurement("a").unwrap();
        n.keep_list(b"\"a\"", vec![a.clone()]);
        assert_eq!(n.list_text(), b"\"a\"");
        let kept = n.list(b"\"a\"").unwrap();
        assert_eq!(kept.len(), 1);
        assert!(Arc::ptr_eq(&kept[0], &a));
        assert!(Arc::ptr_eq(&n.list_names()[0], &a));
        assert_eq!(n.list(b"\"a\" "), None);
        assert_eq!(n.list(b""), None);
        // Another list replaces it.
        n.keep_list(b"", Vec::new());
        assert_eq!(n.list(b"\"a\""), None);
        assert_eq!(n.list(b""), Some(&[][..]));
        // A text over 64 KiB is not kept (and the one before is dropped).
        let long = vec![b' '; 64 * 1024 + 1];
        n.keep_list(&long, vec![a.clone()]);
        assert_eq!(n.list(&long), None);
        assert!(n.list_names().is_empty());
        assert_eq!(n.list_text(), b"");
        assert_eq!(n.list(b"\"a\""), None);
        let most = vec![b' '; 64 * 1024];
        n.keep_list(&most, vec![a]);
        assert_eq!(n.list(&most).map(<[_]>::len), Some(1));
    }

    #[test]
    fn a_full_set_is_emptied() {
        let mut n = Names::with_limit(2);
        assert_eq!(n.limit(), 2);
        let a = n.measurement("a").unwrap();
        n.measurement("b").unwrap();
        assert_eq!(n.len(), 2);
        // A third name empties the set: `a` is interned anew.
        n.measurement("c").unwrap();
        assert_eq!(n.len(), 1);
        let a2 = n.measurement("a").unwrap();
        assert!(!Arc::ptr_eq(&a, &a2));
        assert_eq!(&*a2, "a");
        assert_eq!(n.len(), 2);
        // Devices have their own limit.
        n.device("root.x.y").unwrap();
        assert_eq!(n.len(), 3);
        assert_eq!(Names::with_limit(0).limit(), 1);
        assert!(Names::with_limit(0).is_empty());
    }
}
