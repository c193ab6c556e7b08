//! Unique contributors per calendar month (UTC): the months a page shows and their counts.

use serde::{Deserialize, Serialize};

/// How many months the pages show: this one and the eleven before it.
pub const MONTHS_SHOWN: usize = 12;

/// Distinct downloaders with completions in one calendar month.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonthCount {
    /// `YYYY-MM` (UTC).
    pub month: String,
    /// Distinct downloaders (a HyperLogLog estimate: exact for small numbers, within about 1 %
    /// beyond).
    pub contributors: u64,
}

/// Unique contributors of every project together, for the front page.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contributors {
    /// This month first, then the months before it ([`MONTHS_SHOWN`] in all).
    pub months: Vec<MonthCount>,
}

/// The calendar month (UTC) holding `ms` (milliseconds since the epoch): `(year, month 1-12)`.
pub fn month_of(ms: u64) -> (i64, u32) {
    // Days to a civil date (Howard Hinnant's algorithm, proleptic Gregorian).
    let z = (ms / 86_400_000) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month)
}

/// `YYYY-MM` of the month holding `ms`.
pub fn month_name(ms: u64) -> String {
    let (y, m) = month_of(ms);
    format!("{y:04}-{m:02}")
}

/// The names of the `n` months up to the one holding `ms`, that one first.
pub fn months_back(ms: u64, n: usize) -> Vec<String> {
    let (mut y, mut m) = month_of(ms);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(format!("{y:04}-{m:02}"));
        if m == 1 {
            y -= 1;
            m = 12;
        } else {
            m -= 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_calendar_months_in_utc() {
        assert_eq!(month_name(0), "1970-01");
        // 2024-02-29T23:59:59.999Z, then 2024-03-01T00:00:00Z.
        assert_eq!(month_name(1_709_251_199_999), "2024-02");
        assert_eq!(month_name(1_709_251_200_000), "2024-03");
        // 2023-12-31T23:59:59Z, then 2024-01-01.
        assert_eq!(month_name(1_704_067_199_000), "2023-12");
        assert_eq!(month_name(1_704_067_200_000), "2024-01");
        assert_eq!(
            months_back(1_704_067_200_000, 3),
            ["2024-01", "2023-12", "2023-11"]
        );
        assert!(months_back(0, 0).is_empty());
    }
}
