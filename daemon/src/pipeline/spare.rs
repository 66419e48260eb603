//! The emptied time and value vectors of a thread's last write batches, for its next ones: a
//! source sends batches of the same series again and again, and normalizing one allocated two
//! vectors per series and freed them once the batch was in the log.

use std::cell::RefCell;

use tsfile::basic::Column;
use tsfile::DataType;

use crate::engine::batch::WriteBatch;
use crate::engine::column_capacity_bytes;

/// Bytes of vector capacity one thread keeps at most.
const SPARE_BYTES: usize = 8 << 20;

/// Spare vectors: times, and values by storage type (BOOLEAN, INT32, INT64, FLOAT, DOUBLE;
/// TEXT columns are not kept, their strings would have to be freed one by one anyway).
#[derive(Default)]
struct Spare {
    times: Vec<Vec<i64>>,
    values: [Vec<Column>; 5],
    bytes: usize,
}

thread_local! {
    static SPARE: RefCell<Spare> = RefCell::new(Spare::default());
}

/// The stack of [`Spare::values`] a column of `data_type` goes to (`None`: TEXT).
fn stack(data_type: DataType) -> Option<usize> {
    match data_type.storage_type() {
        DataType::BOOLEAN => Some(0),
        DataType::INT32 => Some(1),
        DataType::INT64 => Some(2),
        DataType::FLOAT => Some(3),
        DataType::DOUBLE => Some(4),
        _ => None,
    }
}

/// Empties `c`, then makes room for `n` values.
fn clear_reserve(c: &mut Column, n: usize) {
    match c {
        Column::Boolean(v) => {
            v.clear();
            v.reserve(n);
        }
        Column::Int32(v) => {
            v.clear();
            v.reserve(n);
        }
        Column::Int64(v) => {
            v.clear();
            v.reserve(n);
        }
        Column::Float(v) => {
            v.clear();
            v.reserve(n);
        }
        Column::Double(v) => {
            v.clear();
            v.reserve(n);
        }
        Column::Text(v) => {
            v.clear();
            v.reserve(n);
        }
    }
}

/// An empty time vector and an empty column of `data_type`, each with room for `n` points:
/// vectors this thread kept ([`recycle`]) when it has some, else new ones.
pub(super) fn vectors(data_type: DataType, n: usize) -> (Vec<i64>, Column) {
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        let mut times = match s.times.pop() {
            Some(t) => {
                s.bytes -= t.capacity() * 8;
                t
            }
            None => Vec::new(),
        };
        times.reserve(n);
        let kept = stack(data_type).and_then(|i| s.values[i].pop());
        let values = match kept {
            Some(mut c) => {
                s.bytes -= column_capacity_bytes(&c);
                clear_reserve(&mut c, n);
                c
            }
            None => Column::with_capacity(data_type, n),
        };
        (times, values)
    })
}

/// Keeps the vectors of `batch` (emptied) for this thread's next batches, within
/// [`SPARE_BYTES`]; the rest is freed.
pub(super) fn recycle(batch: WriteBatch) {
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        for series in batch.series {
            let mut times = series.times;
            let bytes = times.capacity() * 8;
            if s.bytes + bytes <= SPARE_BYTES {
                times.clear();
                s.bytes += bytes;
                s.times.push(times);
            }
            let Some(i) = stack(series.values.data_type()) else {
                continue;
            };
            let bytes = column_capacity_bytes(&series.values);
            if s.bytes + bytes <= SPARE_BYTES {
                s.bytes += bytes;
                s.values[i].push(series.values);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::batch::SeriesData;
    use crate::engine::schema::SeriesType;

    fn series(times: Vec<i64>, values: Column) -> SeriesData {
        SeriesData {
            device: "root.sg.d".into(),
            measurement: "s".into(),
            ty: SeriesType::default_for(values.data_type()),
            times,
            values,
        }
    }

    /// Recycled vectors come back empty, with their capacity, to a column of the same
    /// storage type only (TIMESTAMP is stored as INT64); TEXT columns are not kept; past the
    /// byte limit nothing more is kept.
    #[test]
    fn vectors_come_back_by_type_within_the_limit() {
        // A thread of its own: the vectors are per thread.
        std::thread::spawn(|| {
            let times = Vec::with_capacity(100);
            let times_at = times.as_ptr();
            let mut doubles = Vec::with_capacity(100);
            doubles.push(1.5f64);
            let doubles_at = doubles.as_ptr();
            recycle(WriteBatch {
                series: vec![series(times, Column::Double(doubles))],
            });
            // Another type first: a new column, the kept times.
            let (t, c) = vectors(DataType::INT64, 10);
            assert_eq!(t.as_ptr(), times_at);
            assert!(t.is_empty() && t.capacity() >= 100);
            assert!(matches!(&c, Column::Int64(v) if v.is_empty() && v.capacity() >= 10));
            let (t2, c2) = vectors(DataType::DOUBLE, 10);
            assert!(t2.is_empty() && t2.capacity() >= 10);
            match &c2 {
                Column::Double(v) => {
                    assert_eq!(v.as_ptr(), doubles_at);
                    assert!(v.is_empty() && v.capacity() >= 100);
                }
                other => panic!("a DOUBLE column, not {other:?}"),
            }
            // More room than the kept capacity: it grows.
            recycle(WriteBatch {
                series: vec![series(t, c2)],
            });
            let (t3, c3) = vectors(DataType::DOUBLE, 1000);
            assert!(t3.capacity() >= 1000);
            assert!(matches!(&c3, Column::Double(v) if v.capacity() >= 1000));
            // TIMESTAMP takes INT64 vectors; TEXT is not kept.
            recycle(WriteBatch {
                series: vec![
                    series(Vec::new(), Column::Int64(Vec::with_capacity(8))),
                    series(Vec::new(), Column::Text(vec![b"x".to_vec()])),
                ],
            });
            let (_, ts) = vectors(DataType::TIMESTAMP, 1);
            assert!(matches!(&ts, Column::Int64(v) if v.capacity() >= 8));
            let (_, text) = vectors(DataType::TEXT, 1);
            assert!(matches!(&text, Column::Text(v) if v.is_empty()));
            SPARE.with(|s| assert!(s.borrow().values.iter().all(Vec::is_empty)));
            // At the limit: a vector of more than SPARE_BYTES is not kept.
            let big = SPARE_BYTES / 8 + 1;
            recycle(WriteBatch {
                series: vec![series(Vec::with_capacity(big), Column::Double(Vec::new()))],
            });
            SPARE.with(|s| {
                let s = s.borrow();
                assert!(s.times.iter().all(|t| t.capacity() < big));
                assert!(s.bytes <= SPARE_BYTES);
            });
        })
        .join()
        .unwrap();
    }
}
