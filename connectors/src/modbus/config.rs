//! The `modbus` source's `[[pipeline.source]]` table (with `[[…device]]` and
//! `[[…device.register]]` sub-tables), its validation and its settings.

use std::collections::HashSet;
use std::time::Duration;

use tsfiled_core::path::{validate_device, validate_measurement};
use tsfiled_core::{config_table, FieldDoc, Human, KeyPath, Validator};

use crate::source::{SourceEnv, SourceTable};

/// Largest register count of one read request (Modbus: 125 for function codes 3 and 4).
pub const MAX_REGISTERS_PER_READ: u16 = 125;
/// Largest bit count of one read request (Modbus: 2000 for function codes 1 and 2).
pub const MAX_BITS_PER_READ: u16 = 2000;

config_table! {
    /// `type = "modbus"`: Modbus TCP devices polled for registers, coils and discrete inputs.
    pub struct ModbusTable {
        /// Name of the source, unique in its pipeline.
        #[key("name", "string", "the source type (\"modbus\")")]
        name: Option<String>,
        /// The polled devices (`[[pipeline.source.device]]` tables; at least one), each on its
        /// own connection.
        #[key("device", "array of tables", "required")]
        device: Option<Vec<DeviceTable>>,
    }
}

config_table! {
    /// `[[pipeline.source.device]]` of a `modbus` source: one TCP endpoint and unit id.
    pub struct DeviceTable {
        /// `host:port` of the Modbus TCP server (`[v6 address]:port` for IPv6); the port
        /// defaults to 502.
        #[key("address", "host:port", "required")]
        address: Option<String>,
        /// Unit (slave) identifier, 0 to 255.
        #[key("unit_id", "integer", "1")]
        unit_id: Option<i64>,
        /// IoTDB device path of the points, e.g. `root.plant.plc1`: each poll is one record of
        /// this device at the poll's start time, one field per register entry read.
        #[key("path", "IoTDB path", "required")]
        path: Option<String>,
        /// Time between two polls.
        #[key("poll_interval", "duration", "\"1s\"")]
        poll_interval: Option<Human>,
        /// Timeout of a connection attempt and of one read request.
        #[key("timeout", "duration", "\"1s\"")]
        timeout: Option<Human>,
        /// Further attempts (0 to 10) of a read request that timed out or lost the connection,
        /// each on a new connection, within one poll.
        #[key("retries", "integer", "2")]
        retries: Option<i64>,
        /// First delay before reconnecting after a failed connection attempt, doubled per
        /// failure; polls due meanwhile are skipped.
        #[key("reconnect_initial_backoff", "duration", "\"500ms\"")]
        reconnect_initial_backoff: Option<Human>,
        /// Cap of the reconnect delay.
        #[key("reconnect_max_backoff", "duration", "\"30s\"")]
        reconnect_max_backoff: Option<Human>,
        /// Registers of one read request at most, 4 to 125.
        #[key("max_registers_per_read", "integer", "125")]
        max_registers_per_read: Option<i64>,
        /// Coils or discrete inputs of one read request at most, 1 to 2000.
        #[key("max_bits_per_read", "integer", "2000")]
        max_bits_per_read: Option<i64>,
        /// Unconfigured addresses one read request may span between two entries (0: only
        /// contiguous entries share a request). Some devices refuse reads of unmapped
        /// addresses.
        #[key("max_gap", "integer", "0")]
        max_gap: Option<i64>,
        /// What to read (`[[pipeline.source.device.register]]` tables; at least one): each
        /// entry is one measurement.
        #[key("register", "array of tables", "required")]
        register: Option<Vec<RegisterTable>>,
    }
}

config_table! {
    /// `[[pipeline.source.device.register]]`: one measurement read from a device.
    pub struct RegisterTable {
        /// Measurement name (unique in its device).
        #[key("measurement", "string", "required")]
        measurement: Option<String>,
        /// Which table the address is in: holding registers (function code 3), input
        /// registers (4), coils (1) or discrete inputs (2).
        #[key("kind", "\"holding\" | \"input\" | \"coil\" | \"discrete_input\"", "required")]
        kind: Option<String>,
        /// 0-based protocol address of the (first) register, coil or input.
        #[key("address", "integer", "required")]
        address: Option<i64>,
        /// How the registers are read: 1 register for `int16`/`uint16` (INT32 points), 2 for
        /// `int32` (INT32), `uint32` (INT64) and `float32` (FLOAT), 4 for `int64` (INT64) and
        /// `float64` (DOUBLE). Coils and discrete inputs are `bool` (BOOLEAN).
        #[key("type", "\"int16\" | \"uint16\" | \"int32\" | \"uint32\" | \"int64\" | \"float32\" | \"float64\" | \"bool\"", "\"uint16\" for registers, \"bool\" for coils and discrete inputs")]
        data_type: Option<String>,
        /// Byte order within each register (`"big"`: Modbus' own order).
        #[key("byte_order", "\"big\" | \"little\"", "\"big\"")]
        byte_order: Option<String>,
        /// Order of the registers of a 32- or 64-bit value (`"big"`: the first register holds
        /// the most significant word).
        #[key("word_order", "\"big\" | \"little\"", "\"big\"")]
        word_order: Option<String>,
        /// Factor applied to the value, `value * scale + offset`; the point is then a DOUBLE.
        /// Not for coils and discrete inputs.
        #[key("scale", "float", "none")]
        scale: Option<f64>,
        /// Offset added after `scale`; the point is then a DOUBLE.
        #[key("offset", "float", "none")]
        offset: Option<f64>,
    }
}

/// The four Modbus data tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegisterKind {
    /// Holding registers (function code 3).
    Holding,
    /// Input registers (function code 4).
    Input,
    /// Coils (function code 1).
    Coil,
    /// Discrete inputs (function code 2).
    DiscreteInput,
}

const KINDS: &[(&str, RegisterKind)] = &[
    ("holding", RegisterKind::Holding),
    ("input", RegisterKind::Input),
    ("coil", RegisterKind::Coil),
    ("discrete_input", RegisterKind::DiscreteInput),
];

impl RegisterKind {
    /// Whether the table holds bits (coils, discrete inputs) rather than 16-bit registers.
    pub fn is_bit(self) -> bool {
        matches!(self, RegisterKind::Coil | RegisterKind::DiscreteInput)
    }

    /// The configuration name.
    pub fn name(self) -> &'static str {
        name_of(KINDS, self)
    }
}

/// How the registers of an entry are read as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// A bit (coils and discrete inputs only).
    Bool,
    /// Signed 16-bit integer (1 register).
    Int16,
    /// Unsigned 16-bit integer (1 register).
    Uint16,
    /// Signed 32-bit integer (2 registers).
    Int32,
    /// Unsigned 32-bit integer (2 registers).
    Uint32,
    /// Signed 64-bit integer (4 registers).
    Int64,
    /// IEEE 754 single precision (2 registers).
    Float32,
    /// IEEE 754 double precision (4 registers).
    Float64,
}

const VALUE_TYPES: &[(&str, ValueType)] = &[
    ("int16", ValueType::Int16),
    ("uint16", ValueType::Uint16),
    ("int32", ValueType::Int32),
    ("uint32", ValueType::Uint32),
    ("int64", ValueType::Int64),
    ("float32", ValueType::Float32),
    ("float64", ValueType::Float64),
    ("bool", ValueType::Bool),
];

impl ValueType {
    /// Registers (or bits, for `bool`) the value occupies.
    pub fn width(self) -> u16 {
        match self {
            ValueType::Bool | ValueType::Int16 | ValueType::Uint16 => 1,
            ValueType::Int32 | ValueType::Uint32 | ValueType::Float32 => 2,
            ValueType::Int64 | ValueType::Float64 => 4,
        }
    }
}

/// Byte order within a register, or order of the registers of a value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Order {
    /// Most significant first (Modbus' own order).
    #[default]
    Big,
    /// Least significant first.
    Little,
}

const ORDERS: &[(&str, Order)] = &[("big", Order::Big), ("little", Order::Little)];

fn name_of<T: PartialEq + Copy>(table: &[(&'static str, T)], v: T) -> &'static str {
    table.iter().find(|(_, t)| *t == v).map_or("", |(n, _)| *n)
}

/// The validated settings of a `modbus` source.
#[derive(Debug, Clone, PartialEq)]
pub struct ModbusSourceConfig {
    /// The polled devices (at least one).
    pub devices: Vec<DeviceConfig>,
}

/// One polled device.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceConfig {
    /// The `address` as written.
    pub address: String,
    /// Host name or IP address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Unit (slave) identifier.
    pub unit_id: u8,
    /// IoTDB device path.
    pub path: String,
    /// Time between two polls.
    pub poll_interval: Duration,
    /// Connection and request timeout.
    pub timeout: Duration,
    /// Further attempts of a failed read request.
    pub retries: u32,
    /// First reconnect delay.
    pub reconnect_initial_backoff: Duration,
    /// Reconnect delay cap.
    pub reconnect_max_backoff: Duration,
    /// Registers of one read request at most.
    pub max_registers_per_read: u16,
    /// Bits of one read request at most.
    pub max_bits_per_read: u16,
    /// Unconfigured addresses one request may span.
    pub max_gap: u16,
    /// The entries (at least one), in configuration order.
    pub register: Vec<RegisterConfig>,
}

/// One measurement: a register (or register range), coil or discrete input.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisterConfig {
    /// Measurement name.
    pub measurement: String,
    /// Which table the address is in.
    pub kind: RegisterKind,
    /// 0-based protocol address of the (first) register, coil or input.
    pub address: u16,
    /// Value type (defaults applied).
    pub value_type: ValueType,
    /// Byte order within each register.
    pub byte_order: Order,
    /// Order of the registers of a 32- or 64-bit value.
    pub word_order: Order,
    /// Factor applied to the value.
    pub scale: Option<f64>,
    /// Offset added after `scale`.
    pub offset: Option<f64>,
}

impl RegisterConfig {
    /// Whether `scale` or `offset` applies.
    pub fn is_scaled(&self) -> bool {
        self.scale.is_some() || self.offset.is_some()
    }
}

/// Splits `host:port` (port 502 when absent; `[v6]:port` for IPv6 literals).
pub(crate) fn split_address(address: &str) -> Result<(String, u16), String> {
    let a = address.trim();
    if a.is_empty() {
        return Err("empty address; expected host:port".into());
    }
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let Some((h, tail)) = rest.split_once(']') else {
            return Err(format!("{a:?}: unclosed `[`"));
        };
        match tail.strip_prefix(':') {
            Some(p) => (h, Some(p)),
            None if tail.is_empty() => (h, None),
            None => return Err(format!("{a:?}: expected `:port` after `]`")),
        }
    } else {
        match a.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err(format!("{a:?}: write IPv6 addresses as [addr]:port"))
            }
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    if host.is_empty() {
        return Err(format!("{a:?}: empty host"));
    }
    let port = match port {
        None => 502,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("{a:?}: port {p:?} is not 1-65535")),
        },
    };
    Ok((host.to_string(), port))
}

impl SourceTable for ModbusTable {
    const TYPE: &'static str = "modbus";
    const SUMMARY: &'static str =
        "Modbus TCP devices polled for holding and input registers, coils and discrete inputs";
    const EXAMPLE: &'static str = "[[pipeline.source.device]]\naddress = \"10.0.0.7:502\"\npath = \"root.plant.plc1\"\n[[pipeline.source.device.register]]\nmeasurement = \"temperature\"\nkind = \"holding\"\naddress = 0\n";
    type Settings = ModbusSourceConfig;

    fn tables() -> Vec<(&'static str, &'static [FieldDoc])> {
        vec![
            ("", Self::KEYS),
            ("device[].", DeviceTable::KEYS),
            ("device[].register[].", RegisterTable::KEYS),
        ]
    }

    fn validate(
        &self,
        v: &mut Validator<'_>,
        at: &KeyPath,
        _env: &SourceEnv<'_>,
    ) -> Option<ModbusSourceConfig> {
        let before = v.diags.len();
        let need = "at least one [[pipeline.source.device]] is needed";
        let devices = v
            .nonempty_list(&self.device, at, "device", need)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.validate(v, &at.key("device").index(i)))
            .collect();
        (v.diags.len() == before).then_some(ModbusSourceConfig { devices })
    }
}

/// An integer from `min` to `max` that fits `T`; `default` when not written or out of range.
fn int<T: TryFrom<i64> + Into<i64> + Copy>(
    v: &mut Validator<'_>,
    value: &Option<i64>,
    at: &KeyPath,
    default: T,
    min: T,
    max: T,
) -> T {
    let n = v.int(value, at, default.into(), min.into(), max.into());
    T::try_from(n).unwrap_or(default)
}

impl DeviceTable {
    fn validate(&self, v: &mut Validator<'_>, at: &KeyPath) -> Option<DeviceConfig> {
        let before = v.diags.len();
        let address = v.required(&self.address, at, "address").map(str::to_string);
        let (host, port) = match address.as_deref().map(split_address) {
            Some(Ok(hp)) => hp,
            Some(Err(e)) => {
                v.err(&at.key("address"), e);
                (String::new(), 0)
            }
            None => (String::new(), 0),
        };
        let path = v.required(&self.path, at, "path").map(str::to_string);
        if let Some(p) = &path {
            if let Err(e) = validate_device(p) {
                v.err(&at.key("path"), format!("{p:?} is not a device path: {e}"));
            }
        }
        let unit_id = int(v, &self.unit_id, &at.key("unit_id"), 1u8, 0, 255);
        let poll_interval = v.positive_duration(
            &self.poll_interval,
            &at.key("poll_interval"),
            Duration::from_secs(1),
        );
        let timeout =
            v.positive_duration(&self.timeout, &at.key("timeout"), Duration::from_secs(1));
        let retries = int(v, &self.retries, &at.key("retries"), 2u32, 0, 10);
        let (reconnect_initial_backoff, reconnect_max_backoff) = v.backoff(
            (&self.reconnect_initial_backoff, &self.reconnect_max_backoff),
            at,
            ["reconnect_initial_backoff", "reconnect_max_backoff"],
            [Duration::from_millis(500), Duration::from_secs(30)],
        );
        let max_registers_per_read = int(
            v,
            &self.max_registers_per_read,
            &at.key("max_registers_per_read"),
            MAX_REGISTERS_PER_READ,
            4,
            MAX_REGISTERS_PER_READ,
        );
        let max_bits_per_read = int(
            v,
            &self.max_bits_per_read,
            &at.key("max_bits_per_read"),
            MAX_BITS_PER_READ,
            1,
            MAX_BITS_PER_READ,
        );
        let max_gap = int(v, &self.max_gap, &at.key("max_gap"), 0u16, 0, 1000);
        let mut register = Vec::new();
        match &self.register {
            Some(r) if !r.is_empty() => {
                let mut names = HashSet::new();
                for (j, r) in r.iter().enumerate() {
                    let rat = at.key("register").index(j);
                    let Some(r) = r.validate(v, &rat) else {
                        continue;
                    };
                    if !names.insert(r.measurement.clone()) {
                        v.err(
                            &rat.key("measurement"),
                            format!("{:?} is already used by another entry", r.measurement),
                        );
                    }
                    register.push(r);
                }
            }
            _ => v.err(
                &at.key("register"),
                "at least one [[pipeline.source.device.register]] entry is needed",
            ),
        }
        if v.diags.len() != before {
            return None;
        }
        Some(DeviceConfig {
            address: address.unwrap_or_default(),
            host,
            port,
            unit_id,
            path: path.unwrap_or_default(),
            poll_interval,
            timeout,
            retries,
            reconnect_initial_backoff,
            reconnect_max_backoff,
            max_registers_per_read,
            max_bits_per_read,
            max_gap,
            register,
        })
    }
}

impl RegisterTable {
    fn validate(&self, v: &mut Validator<'_>, at: &KeyPath) -> Option<RegisterConfig> {
        let before = v.diags.len();
        let measurement = v
            .required(&self.measurement, at, "measurement")
            .map(str::to_string);
        if let Some(m) = &measurement {
            if let Err(e) = validate_measurement(m) {
                v.err(
                    &at.key("measurement"),
                    format!("{m:?} is not a measurement name: {e}"),
                );
            }
        }
        v.present(&self.kind, at, "kind");
        let kind = v.choice(&self.kind, &at.key("kind"), RegisterKind::Holding, KINDS);
        let default_type = if kind.is_bit() {
            ValueType::Bool
        } else {
            ValueType::Uint16
        };
        let value_type = v.choice(&self.data_type, &at.key("type"), default_type, VALUE_TYPES);
        if kind.is_bit() != (value_type == ValueType::Bool) {
            let msg = if kind.is_bit() {
                format!("a {} is a bool", kind.name())
            } else {
                format!("a {} register cannot be a bool", kind.name())
            };
            v.err(&at.key("type"), msg);
        }
        v.present(&self.address, at, "address");
        let address = int(v, &self.address, &at.key("address"), 0u16, 0, u16::MAX);
        if u32::from(address) + u32::from(value_type.width()) > 65536 {
            v.err(
                &at.key("address"),
                format!("{} registers from {address} pass 65535", value_type.width()),
            );
        }
        let byte_order = v.choice(&self.byte_order, &at.key("byte_order"), Order::Big, ORDERS);
        let word_order = v.choice(&self.word_order, &at.key("word_order"), Order::Big, ORDERS);
        for (k, x) in [("scale", self.scale), ("offset", self.offset)] {
            match x {
                Some(_) if kind.is_bit() => {
                    v.err_key(&at.key(k), format!("not allowed for a {}", kind.name()))
                }
                Some(x) if !x.is_finite() => v.err(&at.key(k), format!("{x} is not finite")),
                _ => {}
            }
        }
        (v.diags.len() == before).then(|| RegisterConfig {
            measurement: measurement.unwrap_or_default(),
            kind,
            address,
            value_type,
            byte_order,
            word_order,
            scale: self.scale,
            offset: self.offset,
        })
    }
}

impl ModbusSourceConfig {
    /// The table with every default written out.
    pub(super) fn table(&self, name: &str) -> ModbusTable {
        let dur = crate::source::written::duration;
        ModbusTable {
            name: Some(name.to_string()),
            device: Some(
                self.devices
                    .iter()
                    .map(|d| DeviceTable {
                        address: Some(d.address.clone()),
                        unit_id: Some(d.unit_id.into()),
                        path: Some(d.path.clone()),
                        poll_interval: dur(d.poll_interval),
                        timeout: dur(d.timeout),
                        retries: Some(d.retries.into()),
                        reconnect_initial_backoff: dur(d.reconnect_initial_backoff),
                        reconnect_max_backoff: dur(d.reconnect_max_backoff),
                        max_registers_per_read: Some(d.max_registers_per_read.into()),
                        max_bits_per_read: Some(d.max_bits_per_read.into()),
                        max_gap: Some(d.max_gap.into()),
                        register: Some(
                            d.register
                                .iter()
                                .map(|r| RegisterTable {
                                    measurement: Some(r.measurement.clone()),
                                    kind: Some(r.kind.name().to_string()),
                                    address: Some(r.address.into()),
                                    data_type: Some(name_of(VALUE_TYPES, r.value_type).into()),
                                    byte_order: Some(name_of(ORDERS, r.byte_order).into()),
                                    word_order: Some(name_of(ORDERS, r.word_order).into()),
                                    scale: r.scale,
                                    offset: r.offset,
                                })
                                .collect(),
                        ),
                    })
                    .collect(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::validate_table;

    const GOOD: &str = r#"
        name = "plc"
        [[device]]
        address = "127.0.0.1:5020"
        unit_id = 17
        path = "root.plant.plc1"
        poll_interval = "250ms"
        [[device.register]]
        measurement = "temp"
        kind = "holding"
        address = 4
        type = "float32"
        word_order = "little"
        scale = 0.5
        [[device.register]]
        measurement = "run"
        kind = "coil"
        address = 0
    "#;

    #[test]
    fn parses_with_defaults() {
        let c = validate_table::<ModbusTable>(GOOD).unwrap();
        let d = &c.devices[0];
        assert_eq!((d.host.as_str(), d.port), ("127.0.0.1", 5020));
        assert_eq!(d.unit_id, 17);
        assert_eq!(d.poll_interval, Duration::from_millis(250));
        assert_eq!(d.timeout, Duration::from_secs(1));
        assert_eq!(d.retries, 2);
        assert_eq!(d.reconnect_initial_backoff, Duration::from_millis(500));
        assert_eq!(d.reconnect_max_backoff, Duration::from_secs(30));
        assert_eq!(d.max_registers_per_read, 125);
        assert_eq!(d.max_bits_per_read, 2000);
        assert_eq!(d.max_gap, 0);
        let r = &d.register[0];
        assert_eq!(r.value_type, ValueType::Float32);
        assert_eq!((r.byte_order, r.word_order), (Order::Big, Order::Little));
        assert_eq!(r.scale, Some(0.5));
        assert_eq!(d.register[1].value_type, ValueType::Bool);
        assert_eq!(d.register[1].kind, RegisterKind::Coil);
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (
                "unit_id = 17",
                "unit_id = 17\nretries = 11",
                "device[0].retries",
            ),
            (
                "address = \"127.0.0.1:5020\"",
                "address = \"127.0.0.1:0\"",
                "device[0].address",
            ),
            (
                "path = \"root.plant.plc1\"",
                "path = \"plant..x\"",
                "device[0].path",
            ),
            (
                "poll_interval = \"250ms\"",
                "poll_interval = \"0s\"",
                "device[0].poll_interval",
            ),
            (
                "type = \"float32\"",
                "type = \"bool\"",
                "device[0].register[0].type",
            ),
            (
                "measurement = \"run\"",
                "measurement = \"temp\"",
                "device[0].register[1].measurement",
            ),
            (
                "address = 4",
                "address = 65535",
                "device[0].register[0].address",
            ),
            (
                "address = 0",
                "address = 0\nscale = 2.0",
                "device[0].register[1].scale",
            ),
            ("unit_id = 17", "unit_id = 256", "device[0].unit_id"),
            (
                "kind = \"holding\"",
                "kind = \"holdings\"",
                "device[0].register[0].kind",
            ),
            (
                "word_order = \"little\"",
                "word_order = \"middle\"",
                "device[0].register[0].word_order",
            ),
            ("\"250ms\"", "\"250\"", "device[0].poll_interval"),
        ];
        for (from, to, key) in cases {
            let text = GOOD.replacen(from, to, 1);
            assert_ne!(text, GOOD, "{from}");
            let errs = validate_table::<ModbusTable>(&text).expect_err(key);
            assert_eq!(errs.len(), 1, "{errs:?}");
            // `line:column: key: message`
            assert_eq!(errs[0].split(": ").nth(1), Some(key), "{errs:?}");
        }
    }

    #[test]
    fn every_device_and_entry_is_required_and_keys_are_known() {
        let errs = validate_table::<ModbusTable>("name = \"m\"\n").unwrap_err();
        assert!(errs[0].ends_with(
            "device: missing required key `device`: at least one [[pipeline.source.device]] is needed"
        ));
        let bad = GOOD.replacen("unit_id = 17", "unit = 17", 1);
        let errs = validate_table::<ModbusTable>(&bad).unwrap_err();
        assert!(errs[0].contains("`unit`"), "{errs:?}");
    }

    #[test]
    fn the_effective_table_validates_to_the_same_settings() {
        let c = validate_table::<ModbusTable>(GOOD).unwrap();
        let text = toml::to_string(&c.table("plc")).unwrap();
        assert_eq!(validate_table::<ModbusTable>(&text).unwrap(), c, "{text}");
    }

    #[test]
    fn addresses() {
        assert_eq!(split_address("plc:1502"), Ok(("plc".into(), 1502)));
        assert_eq!(split_address("10.0.0.1"), Ok(("10.0.0.1".into(), 502)));
        assert_eq!(split_address("[::1]:5020"), Ok(("::1".into(), 5020)));
        assert_eq!(split_address("[::1]"), Ok(("::1".into(), 502)));
        for bad in ["", ":502", "h:x", "h:70000", "::1", "[::1"] {
            assert!(split_address(bad).is_err(), "{bad}");
        }
    }
}
