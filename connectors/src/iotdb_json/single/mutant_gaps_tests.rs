//! Tests added for mutants of the single-record reader that no other test caught
//! (docs/mutants.md, the MQTT runtime side).

use super::super::parse_iotdb_json_with;
use super::*;

/// Decimals of 20 digits in all whose digits form an integer just above 2^64
/// (18446744073709551621 = 2^64 + 5, which a `u64` accumulation wraps to 5): far above 2^53,
/// so the direct reader must leave them (its contract), and the payload must read as the
/// standard library reads the literal, not as 5 divided by a power of ten. One has 10 digits
/// on each side of the point, one a single digit before it and 19 after.
#[test]
fn decimals_of_20_digits_just_above_2_to_the_64_read_as_the_standard_library_reads_them() {
    for text in [
        "1844674407.3709551621",
        "1.8446744073709551621",
        "-1.8446744073709551621",
    ] {
        // Where the number would end, with what follows it in a payload.
        assert_eq!(
            number_at(format!("{text}]}}").as_bytes(), 0),
            None,
            "{text}"
        );
        let want: f64 = text.parse().unwrap();
        let payload = format!(
            r#"{{"device":"root.a.b","timestamp":1,"measurements":["v"],"values":[{text}]}}"#
        );
        let b = parse_iotdb_json_with(
            payload.as_bytes(),
            &JsonOptions::default(),
            &mut Names::default(),
        );
        assert!(b.rejections.is_empty(), "{text}: {:?}", b.rejections);
        match b.records[0].fields[0].value {
            FieldValue::Float(got) => assert_eq!(got.to_bits(), want.to_bits(), "{text}"),
            ref other => panic!("{text}: {other:?}"),
        }
    }
}
