//! Turning read registers and bits into field values.

use crate::model::{DataType, Field, FieldValue};

use super::config::{Order, RegisterConfig, ValueType};

/// The value of a register entry read as `words` (exactly its width, in address order).
///
/// `byte_order` swaps the two bytes of each register; `word_order` little reverses the
/// registers; the result is then read most significant byte first.
pub(crate) fn decode_words(words: &[u16], reg: &RegisterConfig) -> Field {
    let t = reg.value_type;
    let mut bytes = [0u8; 8];
    let n = words.len().min(4);
    for i in 0..n {
        let w = match reg.word_order {
            Order::Big => words[i],
            Order::Little => words[n - 1 - i],
        };
        let [hi, lo] = w.to_be_bytes();
        let pair = match reg.byte_order {
            Order::Big => [hi, lo],
            Order::Little => [lo, hi],
        };
        bytes[2 * i..2 * i + 2].copy_from_slice(&pair);
    }
    let b2 = [bytes[0], bytes[1]];
    let b4 = [bytes[0], bytes[1], bytes[2], bytes[3]];
    let (value, hint) = match t {
        ValueType::Int16 => (
            FieldValue::Int(i16::from_be_bytes(b2).into()),
            DataType::INT32,
        ),
        ValueType::Uint16 => (
            FieldValue::Int(u16::from_be_bytes(b2).into()),
            DataType::INT32,
        ),
        ValueType::Int32 => (
            FieldValue::Int(i32::from_be_bytes(b4).into()),
            DataType::INT32,
        ),
        ValueType::Uint32 => (
            FieldValue::Int(u32::from_be_bytes(b4).into()),
            DataType::INT64,
        ),
        ValueType::Int64 => (FieldValue::Int(i64::from_be_bytes(bytes)), DataType::INT64),
        ValueType::Float32 => (
            FieldValue::Float(f32::from_be_bytes(b4).into()),
            DataType::FLOAT,
        ),
        ValueType::Float64 => (
            FieldValue::Float(f64::from_be_bytes(bytes)),
            DataType::DOUBLE,
        ),
        // Validation keeps bools off registers; read the low bit if one gets here.
        ValueType::Bool => (FieldValue::Bool(bytes[1] & 1 == 1), DataType::BOOLEAN),
    };
    scaled(reg, value, hint)
}

/// The value of a coil or discrete input.
pub(crate) fn decode_bit(bit: bool, reg: &RegisterConfig) -> Field {
    scaled(reg, FieldValue::Bool(bit), DataType::BOOLEAN)
}

fn scaled(reg: &RegisterConfig, value: FieldValue, hint: DataType) -> Field {
    let (value, hint) = if reg.is_scaled() {
        let x = match value {
            FieldValue::Int(i) => i as f64,
            FieldValue::Float(f) => f,
            other => return field(reg, other, hint),
        };
        let y = x * reg.scale.unwrap_or(1.0) + reg.offset.unwrap_or(0.0);
        (FieldValue::Float(y), DataType::DOUBLE)
    } else {
        (value, hint)
    };
    field(reg, value, hint)
}

fn field(reg: &RegisterConfig, value: FieldValue, hint: DataType) -> Field {
    Field {
        measurement: reg.measurement.as_str().into(),
        value,
        type_hint: Some(hint),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modbus::config::RegisterKind;

    fn reg(t: ValueType, byte: Order, word: Order) -> RegisterConfig {
        RegisterConfig {
            measurement: "m".into(),
            kind: RegisterKind::Holding,
            address: 0,
            value_type: t,
            byte_order: byte,
            word_order: word,
            scale: None,
            offset: None,
        }
    }

    use Order::{Big as B, Little as L};

    #[test]
    fn the_four_orders_of_a_float32() {
        // 21.5f32 is 0x41AC0000 (IEEE 754): bytes A=41 B=AC C=00 D=00.
        let cases = [
            ([0x41AC, 0x0000], B, B), // ABCD
            ([0x0000, 0x41AC], B, L), // CDAB
            ([0xAC41, 0x0000], L, B), // BADC
            ([0x0000, 0xAC41], L, L), // DCBA
        ];
        for (words, byte, word) in cases {
            let f = decode_words(&words, &reg(ValueType::Float32, byte, word));
            assert_eq!(f.value, FieldValue::Float(21.5), "{words:x?}");
            assert_eq!(f.type_hint, Some(DataType::FLOAT));
        }
    }

    #[test]
    fn integers() {
        let d = |w: &[u16], t, b, o| decode_words(w, &reg(t, b, o)).value;
        assert_eq!(d(&[0xFFFE], ValueType::Int16, B, B), FieldValue::Int(-2));
        assert_eq!(d(&[0xFEFF], ValueType::Int16, L, B), FieldValue::Int(-2));
        assert_eq!(
            d(&[0xFFFE], ValueType::Uint16, B, B),
            FieldValue::Int(65534)
        );
        // -123456789 = 0xF8A432EB; 3000000000 = 0xB2D05E00.
        assert_eq!(
            d(&[0xF8A4, 0x32EB], ValueType::Int32, B, B),
            FieldValue::Int(-123_456_789)
        );
        assert_eq!(
            d(&[0x5E00, 0xB2D0], ValueType::Uint32, B, L),
            FieldValue::Int(3_000_000_000)
        );
        // -2 as int64, all orders alike for 0xFF..FE except where FE lands.
        assert_eq!(
            d(&[0xFEFF, 0xFFFF, 0xFFFF, 0xFFFF], ValueType::Int64, L, L),
            FieldValue::Int(-2)
        );
        assert_eq!(
            d(&[0x0102, 0x0304, 0x0506, 0x0708], ValueType::Int64, B, B),
            FieldValue::Int(0x0102_0304_0506_0708)
        );
        assert_eq!(
            d(&[0x0708, 0x0506, 0x0304, 0x0102], ValueType::Int64, B, L),
            FieldValue::Int(0x0102_0304_0506_0708)
        );
        // 1.0f64 = 0x3FF0000000000000.
        assert_eq!(
            d(&[0, 0, 0, 0xF03F], ValueType::Float64, L, L),
            FieldValue::Float(1.0)
        );
    }

    #[test]
    fn scale_and_offset_make_a_double() {
        let mut r = reg(ValueType::Uint16, B, B);
        r.scale = Some(0.5);
        r.offset = Some(-40.0);
        let f = decode_words(&[655], &r);
        assert_eq!(f.value, FieldValue::Float(287.5));
        assert_eq!(f.type_hint, Some(DataType::DOUBLE));
        r.kind = RegisterKind::Coil;
        r.value_type = ValueType::Bool;
        r.scale = None;
        r.offset = None;
        let f = decode_bit(true, &r);
        assert_eq!(f.value, FieldValue::Bool(true));
        assert_eq!(f.type_hint, Some(DataType::BOOLEAN));
    }
}
