//! Collecting rejections with a bound on how many are itemized per payload.

use crate::model::{Batch, Location, RejectReason, Rejection};

/// Itemized rejections per payload; past this, rejections are summed into one summary entry
/// per reason (location [`Location::More`], shown `(more)`), so a huge bad payload cannot make
/// a huge rejection list.
pub const MAX_ITEMIZED_REJECTIONS: usize = 1000;

/// Adds a rejection to `batch`; `location` and `message` are only built while under the
/// itemized limit.
pub(crate) fn reject(
    batch: &mut Batch,
    reason: RejectReason,
    points: u64,
    location: impl FnOnce() -> Location,
    message: impl FnOnce() -> String,
) {
    let points = points.max(1);
    if batch.rejections.len() < MAX_ITEMIZED_REJECTIONS {
        batch.rejections.push(Rejection {
            location: location(),
            reason,
            message: message(),
            points,
        });
        return;
    }
    if let Some(summary) = batch.rejections[MAX_ITEMIZED_REJECTIONS..]
        .iter_mut()
        .find(|r| r.reason == reason)
    {
        summary.points += points;
        summary.message = format!(
            "{} more points rejected ({})",
            summary.points,
            reason.label()
        );
        return;
    }
    batch.rejections.push(Rejection {
        location: Location::More,
        reason,
        message: format!("{points} more points rejected ({})", reason.label()),
        points,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarizes_past_the_limit() {
        let mut b = Batch::default();
        for i in 0..MAX_ITEMIZED_REJECTIONS + 10 {
            reject(
                &mut b,
                RejectReason::Parse,
                2,
                || Location::line(i as u64),
                || "x".into(),
            );
        }
        reject(
            &mut b,
            RejectReason::InvalidTime,
            0,
            || Location::line(1),
            || "m".into(),
        );
        assert_eq!(b.rejections.len(), MAX_ITEMIZED_REJECTIONS + 2);
        let parse = &b.rejections[MAX_ITEMIZED_REJECTIONS];
        assert_eq!(parse.location, Location::More);
        assert_eq!(parse.location.to_string(), "(more)");
        assert_eq!(parse.points, 20);
        assert_eq!(b.rejections[MAX_ITEMIZED_REJECTIONS + 1].points, 1);
        assert_eq!(
            b.rejected_points(),
            2 * (MAX_ITEMIZED_REJECTIONS as u64 + 10) + 1
        );
    }
}
