//! Settings of one Modbus source ([`ModbusConfig`]): serde form of its `[[pipeline.source]]`
//! table, defaults and validation.

use std::collections::HashSet;
use std::time::Duration;

use serde::Deserialize;

use crate::path::{validate_device, validate_measurement};

use super::ModbusError;

/// Largest register count of one read request (Modbus: 125 for function codes 3 and 4).
pub const MAX_REGISTERS_PER_READ: u16 = 125;
/// Largest bit count of one read request (Modbus: 2000 for function codes 1 and 2).
pub const MAX_BITS_PER_READ: u16 = 2000;

/// A Modbus TCP source: polls one or more devices.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModbusConfig {
    /// Source name (logs).
    #[serde(default = "default_name")]
    pub name: String,
    /// Polled devices (`[[…device]]` tables; at least one).
    #[serde(default)]
    pub device: Vec<DeviceConfig>,
}

/// One polled device: a TCP endpoint and unit id, and what to read from it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    /// `host:port` of the Modbus TCP server (the port defaults to 502).
    pub address: String,
    /// Unit (slave) identifier, 0–255 (default 1).
    #[serde(default = "default_unit_id")]
    pub unit_id: u8,
    /// IoTDB device path of the points, e.g. `root.plant.plc1`.
    pub path: String,
    /// Time between two polls (default 1 s).
    #[serde(
        default = "default_poll_interval",
        deserialize_with = "tsfiled_core::deserialize_duration"
    )]
    pub poll_interval: Duration,
    /// Timeout of a connection attempt and of one read request (default 1 s).
    #[serde(
        default = "default_timeout",
        deserialize_with = "tsfiled_core::deserialize_duration"
    )]
    pub timeout: Duration,
    /// Further attempts of a read request that timed out or lost the connection (each on a new
    /// connection) within one poll (default 2; at most 10).
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// First delay before reconnecting after a failed connection attempt, doubled per failure
    /// (default 500 ms).
    #[serde(
        default = "default_backoff",
        deserialize_with = "tsfiled_core::deserialize_duration"
    )]
    pub reconnect_initial_backoff: Duration,
    /// Cap of the reconnect delay (default 30 s).
    #[serde(
        default = "default_max_backoff",
        deserialize_with = "tsfiled_core::deserialize_duration"
    )]
    pub reconnect_max_backoff: Duration,
    /// Registers of one read request at most, 4–125 (default 125).
    #[serde(default = "default_max_registers")]
    pub max_registers_per_read: u16,
    /// Coils or discrete inputs of one read request at most, 1–2000 (default 2000).
    #[serde(default = "default_max_bits")]
    pub max_bits_per_read: u16,
    /// Unconfigured addresses one read request may span between two entries (default 0: only
    /// contiguous entries share a request). Some devices refuse reads of unmapped addresses.
    #[serde(default)]
    pub max_gap: u16,
    /// What to read (`[[…register]]` tables; at least one): each entry is one measurement.
    #[serde(default)]
    pub register: Vec<RegisterConfig>,
}

/// One measurement: a register (or register range), coil or discrete input.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterConfig {
    /// Measurement name.
    pub measurement: String,
    /// Which table the address is in.
    pub kind: RegisterKind,
    /// 0-based protocol address of the (first) register, coil or input.
    pub address: u16,
    /// Value type (default `uint16` for registers; coils and discrete inputs are `bool`).
    #[serde(rename = "type", default)]
    pub data_type: Option<ValueType>,
    /// Byte order within each register (default `big`).
    #[serde(default)]
    pub byte_order: Order,
    /// Order of the registers of a 32- or 64-bit value (default `big`: the first register holds
    /// the most significant word).
    #[serde(default)]
    pub word_order: Order,
    /// Factor applied to the value: `value * scale + offset` (the point is then a DOUBLE).
    #[serde(default)]
    pub scale: Option<f64>,
    /// Offset added after `scale` (the point is then a DOUBLE).
    #[serde(default)]
    pub offset: Option<f64>,
}

/// The four Modbus data tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
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

impl RegisterKind {
    /// Whether the table holds bits (coils, discrete inputs) rather than 16-bit registers.
    pub fn is_bit(self) -> bool {
        matches!(self, RegisterKind::Coil | RegisterKind::DiscreteInput)
    }

    /// The configuration name.
    pub fn name(self) -> &'static str {
        match self {
            RegisterKind::Holding => "holding",
            RegisterKind::Input => "input",
            RegisterKind::Coil => "coil",
            RegisterKind::DiscreteInput => "discrete_input",
        }
    }
}

/// How the registers of an entry are read as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Most significant first (Modbus' own order).
    #[default]
    Big,
    /// Least significant first.
    Little,
}

impl RegisterConfig {
    /// The value type, defaults applied.
    pub fn value_type(&self) -> ValueType {
        match self.data_type {
            Some(t) => t,
            None if self.kind.is_bit() => ValueType::Bool,
            None => ValueType::Uint16,
        }
    }

    /// Whether `scale` or `offset` applies.
    pub fn is_scaled(&self) -> bool {
        self.scale.is_some() || self.offset.is_some()
    }
}

fn default_name() -> String {
    "modbus".into()
}
fn default_unit_id() -> u8 {
    1
}
fn default_poll_interval() -> Duration {
    Duration::from_secs(1)
}
fn default_timeout() -> Duration {
    Duration::from_secs(1)
}
fn default_retries() -> u32 {
    2
}
fn default_backoff() -> Duration {
    Duration::from_millis(500)
}
fn default_max_backoff() -> Duration {
    Duration::from_secs(30)
}
fn default_max_registers() -> u16 {
    MAX_REGISTERS_PER_READ
}
fn default_max_bits() -> u16 {
    MAX_BITS_PER_READ
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

impl ModbusConfig {
    /// Checks every setting; the error names the key, e.g. `device[0].register[2].type`.
    pub fn validate(&self) -> Result<(), ModbusError> {
        if self.device.is_empty() {
            return Err(ModbusError::invalid(
                "device",
                "at least one device is needed",
            ));
        }
        for (i, d) in self.device.iter().enumerate() {
            d.validate(&format!("device[{i}]"))?;
        }
        Ok(())
    }
}

impl DeviceConfig {
    fn validate(&self, at: &str) -> Result<(), ModbusError> {
        let key = |k: &str| format!("{at}.{k}");
        split_address(&self.address).map_err(|m| ModbusError::invalid(key("address"), m))?;
        validate_device(&self.path).map_err(|e| {
            ModbusError::invalid(
                key("path"),
                format!("{:?} is not a device path: {e}", self.path),
            )
        })?;
        if self.poll_interval.is_zero() {
            return Err(ModbusError::invalid(key("poll_interval"), "must be > 0"));
        }
        if self.timeout.is_zero() {
            return Err(ModbusError::invalid(key("timeout"), "must be > 0"));
        }
        if self.retries > 10 {
            return Err(ModbusError::invalid(
                key("retries"),
                format!("{} is more than 10", self.retries),
            ));
        }
        if self.reconnect_initial_backoff.is_zero() {
            return Err(ModbusError::invalid(
                key("reconnect_initial_backoff"),
                "must be > 0",
            ));
        }
        if self.reconnect_max_backoff < self.reconnect_initial_backoff {
            return Err(ModbusError::invalid(
                key("reconnect_max_backoff"),
                "must be at least reconnect_initial_backoff",
            ));
        }
        if !(4..=MAX_REGISTERS_PER_READ).contains(&self.max_registers_per_read) {
            return Err(ModbusError::invalid(
                key("max_registers_per_read"),
                format!(
                    "{} is not 4-{MAX_REGISTERS_PER_READ}",
                    self.max_registers_per_read
                ),
            ));
        }
        if !(1..=MAX_BITS_PER_READ).contains(&self.max_bits_per_read) {
            return Err(ModbusError::invalid(
                key("max_bits_per_read"),
                format!("{} is not 1-{MAX_BITS_PER_READ}", self.max_bits_per_read),
            ));
        }
        if self.register.is_empty() {
            return Err(ModbusError::invalid(
                key("register"),
                "at least one register entry is needed",
            ));
        }
        let mut names = HashSet::new();
        for (j, r) in self.register.iter().enumerate() {
            let at = format!("{at}.register[{j}]");
            r.validate(&at)?;
            if !names.insert(r.measurement.as_str()) {
                return Err(ModbusError::invalid(
                    format!("{at}.measurement"),
                    format!("{:?} is already used by another entry", r.measurement),
                ));
            }
        }
        Ok(())
    }
}

impl RegisterConfig {
    fn validate(&self, at: &str) -> Result<(), ModbusError> {
        let key = |k: &str| format!("{at}.{k}");
        validate_measurement(&self.measurement).map_err(|e| {
            ModbusError::invalid(
                key("measurement"),
                format!("{:?} is not a measurement name: {e}", self.measurement),
            )
        })?;
        let t = self.value_type();
        if self.kind.is_bit() != (t == ValueType::Bool) {
            let msg = if self.kind.is_bit() {
                format!("a {} is a bool", self.kind.name())
            } else {
                format!("a {} register cannot be a bool", self.kind.name())
            };
            return Err(ModbusError::invalid(key("type"), msg));
        }
        if u32::from(self.address) + u32::from(t.width()) > 65536 {
            return Err(ModbusError::invalid(
                key("address"),
                format!("{} registers from {} pass 65535", t.width(), self.address),
            ));
        }
        if t == ValueType::Bool && self.is_scaled() {
            let k = if self.scale.is_some() {
                "scale"
            } else {
                "offset"
            };
            return Err(ModbusError::invalid(key(k), "not allowed for a bool"));
        }
        for (k, v) in [("scale", self.scale), ("offset", self.offset)] {
            if let Some(v) = v {
                if !v.is_finite() {
                    return Err(ModbusError::invalid(key(k), format!("{v} is not finite")));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> ModbusConfig {
        toml::from_str(toml_text).unwrap()
    }

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
        let c = parse(GOOD);
        c.validate().unwrap();
        assert_eq!(c.name, "plc");
        let d = &c.device[0];
        assert_eq!(d.unit_id, 17);
        assert_eq!(d.poll_interval, Duration::from_millis(250));
        assert_eq!(d.timeout, Duration::from_secs(1));
        assert_eq!(d.retries, 2);
        assert_eq!(d.max_registers_per_read, 125);
        assert_eq!(d.max_bits_per_read, 2000);
        assert_eq!(d.max_gap, 0);
        let r = &d.register[0];
        assert_eq!(r.value_type(), ValueType::Float32);
        assert_eq!((r.byte_order, r.word_order), (Order::Big, Order::Little));
        assert_eq!(d.register[1].value_type(), ValueType::Bool);
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
        ];
        for (from, to, key) in cases {
            let text = GOOD.replacen(from, to, 1);
            assert_ne!(text, GOOD, "{from}");
            let err = parse(&text).validate().expect_err(key);
            match &err {
                ModbusError::Invalid { key: k, .. } => assert_eq!(k, key, "{err}"),
                other => panic!("{other:?}"),
            }
            assert!(err.to_string().contains(key), "{err}");
        }
    }

    #[test]
    fn serde_refuses_unknown_keys_and_values() {
        for bad in [
            GOOD.replacen("kind = \"holding\"", "kind = \"holdings\"", 1),
            GOOD.replacen("word_order = \"little\"", "word_order = \"middle\"", 1),
            GOOD.replacen("unit_id = 17", "unit_id = 256", 1),
            GOOD.replacen("unit_id = 17", "unit = 17", 1),
            GOOD.replacen("\"250ms\"", "\"250\"", 1),
        ] {
            assert!(toml::from_str::<ModbusConfig>(&bad).is_err(), "{bad}");
        }
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
