//! Grouping a device's register entries into read requests over contiguous ranges.

use super::config::{DeviceConfig, RegisterKind};

/// One read request of a poll and the entries it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Read {
    /// The table read.
    pub kind: RegisterKind,
    /// First address.
    pub start: u16,
    /// Registers or bits read.
    pub count: u16,
    /// Indexes of the entries (into `DeviceConfig::register`) it covers.
    pub entries: Vec<usize>,
}

/// The read requests of one poll of `dev`: per table, entries sorted by address; an entry joins
/// the current request when the unconfigured addresses between them are at most `max_gap` and
/// the request stays within `max_registers_per_read` (`max_bits_per_read` for bits).
/// Overlapping entries share a request.
pub(crate) fn plan(dev: &DeviceConfig) -> Vec<Read> {
    let mut order: Vec<usize> = (0..dev.register.len()).collect();
    order.sort_by_key(|&i| {
        let r = &dev.register[i];
        (r.kind, r.address, r.value_type.width())
    });
    let mut reads: Vec<Read> = Vec::new();
    for i in order {
        let r = &dev.register[i];
        let start = u32::from(r.address);
        let end = start + u32::from(r.value_type.width());
        let max = u32::from(if r.kind.is_bit() {
            dev.max_bits_per_read
        } else {
            dev.max_registers_per_read
        });
        if let Some(cur) = reads.last_mut() {
            let cur_start = u32::from(cur.start);
            let cur_end = cur_start + u32::from(cur.count);
            let joins = cur.kind == r.kind
                && start <= cur_end + u32::from(dev.max_gap)
                && end.max(cur_end) - cur_start <= max;
            if joins {
                // Fits u16: at most `max` (≤ 2000).
                cur.count = (end.max(cur_end) - cur_start) as u16;
                cur.entries.push(i);
                continue;
            }
        }
        reads.push(Read {
            kind: r.kind,
            start: r.address,
            count: (end - start) as u16,
            entries: vec![i],
        });
    }
    reads
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modbus::config::ModbusTable;
    use crate::source::validate_table;

    fn device(extra: &str, regs: &[(&str, &str, u16)]) -> DeviceConfig {
        let mut text = format!("[[device]]\naddress = \"h:1\"\npath = \"root.a\"\n{extra}\n");
        for (i, (kind, ty, addr)) in regs.iter().enumerate() {
            text.push_str(&format!(
                "[[device.register]]\nmeasurement = \"m{i}\"\nkind = \"{kind}\"\naddress = {addr}\n"
            ));
            if !ty.is_empty() {
                text.push_str(&format!("type = \"{ty}\"\n"));
            }
        }
        let c = validate_table::<ModbusTable>(&text).unwrap();
        c.devices.into_iter().next().unwrap()
    }

    fn ranges(reads: &[Read]) -> Vec<(RegisterKind, u16, u16, Vec<usize>)> {
        reads
            .iter()
            .map(|r| (r.kind, r.start, r.count, r.entries.clone()))
            .collect()
    }

    use RegisterKind::*;

    #[test]
    fn contiguous_entries_share_a_request() {
        let d = device(
            "",
            &[
                ("holding", "float32", 2),
                ("holding", "int16", 0),
                ("holding", "", 1),
                ("holding", "int64", 4),
                ("holding", "", 9),
                ("input", "", 4),
                ("coil", "", 3),
                ("coil", "", 4),
                ("discrete_input", "", 4),
            ],
        );
        assert_eq!(
            ranges(&plan(&d)),
            vec![
                (Holding, 0, 8, vec![1, 2, 0, 3]),
                (Holding, 9, 1, vec![4]),
                (Input, 4, 1, vec![5]),
                (Coil, 3, 2, vec![6, 7]),
                (DiscreteInput, 4, 1, vec![8]),
            ]
        );
    }

    #[test]
    fn gaps_and_limits() {
        let regs = [
            ("holding", "", 0),
            ("holding", "", 3),
            ("holding", "float64", 6),
        ];
        let d = device("max_gap = 2", &regs);
        assert_eq!(ranges(&plan(&d)), vec![(Holding, 0, 10, vec![0, 1, 2])]);
        let d = device("max_gap = 2\nmax_registers_per_read = 8", &regs);
        assert_eq!(
            ranges(&plan(&d)),
            vec![(Holding, 0, 4, vec![0, 1]), (Holding, 6, 4, vec![2])]
        );
        let d = device("max_gap = 1", &regs);
        assert_eq!(plan(&d).len(), 3);
        // Overlapping entries: one request.
        let d = device("", &[("input", "uint32", 10), ("input", "", 11)]);
        assert_eq!(ranges(&plan(&d)), vec![(Input, 10, 2, vec![0, 1])]);
        let d = device(
            "max_bits_per_read = 2",
            &[("coil", "", 0), ("coil", "", 1), ("coil", "", 2)],
        );
        assert_eq!(
            ranges(&plan(&d)),
            vec![(Coil, 0, 2, vec![0, 1]), (Coil, 2, 1, vec![2])]
        );
    }
}
