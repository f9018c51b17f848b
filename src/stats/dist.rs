//! gem5's `statistics::Distribution`: values counted in equal buckets over a configured
//! range `[min, max]`, with the counts below and above it, the sum and sum of squares of
//! every value (for the mean and standard deviation) and the smallest and largest value.
//!
//! Values are integers (queue depths, latencies in cycles), so counts, sums and squares are
//! exact and a timed region's distribution is an exact difference. Counts saturate at their
//! largest value rather than wrap.

use std::borrow::Cow;

use super::StatValue;

/// The most buckets a distribution may have: its counts are allocated up front.
pub const MAX_BUCKETS: u64 = 1 << 20;

/// A distribution that cannot be built, or two that cannot be combined.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DistError(pub String);

/// Samples counted in buckets of `bucket_size` values from `min` to `max`, as gem5's
/// `Distribution` counts them: a value below `min` is an underflow, one above `max` an
/// overflow (the last bucket is cut at `max` when `bucket_size` does not divide the range).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Distribution {
    min: i64,
    max: i64,
    bucket_size: u64,
    /// `bucket_size`'s log2 where it is a power of two (a shift finds the bucket, where a
    /// division costs tens of host cycles per sample), else `u32::MAX`.
    shift: u32,
    buckets: Box<[u64]>,
    samples: u64,
    sum: i128,
    squares: u128,
    underflows: u64,
    overflows: u64,
    /// `i64::MAX` and `i64::MIN` until the first sample, so one comparison each updates
    /// them; `min_value <= max_value` tells whether anything was sampled.
    min_value: i64,
    max_value: i64,
}

/// One printed line of a distribution: the part of its name after `::`, its value, and its
/// pdf and cdf in percent where gem5 prints them.
#[derive(Clone, Debug, PartialEq)]
pub struct DistLine {
    pub field: Cow<'static, str>,
    pub value: StatValue,
    pub pdf: Option<f64>,
    pub cdf: Option<f64>,
}

impl Distribution {
    /// MPI queue search depths, in MOPED and in the software path alike: buckets of 4 up to
    /// 127 entries, since IMB's and NPB's queues are a few entries deep; deeper searches
    /// (the queue benchmarks) count as overflows with their exact maximum.
    pub fn queue_depths() -> Distribution {
        Distribution::new(0, 127, 4).expect("constant bounds are valid")
    }

    /// MPI message sizes in bytes: 64 buckets of 16 KiB up to 1 MiB, the range of IMB's
    /// and NPB's messages (a message of the paper's 16 kB fills the second bucket, a
    /// barrier's the first); larger ones count as overflows with their exact maximum.
    pub fn message_sizes() -> Distribution {
        Distribution::new(0, (1 << 20) - 1, 16 * 1024).expect("constant bounds are valid")
    }

    /// Latencies in cycles: 64 buckets of 4,096 cycles up to 262,143 (an eager 16 kB
    /// message takes some thousands); longer ones count as overflows with their exact
    /// maximum, and the mean and deviation count every sample.
    pub fn latencies() -> Distribution {
        Distribution::new(0, (1 << 18) - 1, 4096).expect("constant bounds are valid")
    }

    /// Cycles an access that missed the L1 took: 64 buckets of 8 cycles up to 511 (an L2
    /// hit takes 11 with Table 1's latencies, a line from memory some hundred); longer
    /// ones, behind a busy line, count as overflows with their exact maximum.
    pub fn miss_latencies() -> Distribution {
        Distribution::new(0, 511, 8).expect("constant bounds are valid")
    }

    /// An empty distribution of `bucket_size`-wide buckets covering `[min, max]`: gem5's
    /// `Distribution::init(min, max, bucket_size)`. The range must not be empty, the bucket
    /// size not 0, and the buckets at most [`MAX_BUCKETS`].
    pub fn new(min: i64, max: i64, bucket_size: u64) -> Result<Distribution, DistError> {
        if bucket_size == 0 {
            return Err(DistError(
                "distribution bucket size must be at least 1, got 0".to_string(),
            ));
        }
        if max < min {
            return Err(DistError(format!(
                "distribution range [{min}, {max}] is empty: max is below min"
            )));
        }
        let width = (i128::from(max) - i128::from(min) + 1).unsigned_abs();
        let n = width.div_ceil(u128::from(bucket_size));
        if n > u128::from(MAX_BUCKETS) {
            return Err(DistError(format!(
                "distribution range [{min}, {max}] in buckets of {bucket_size} needs {n} \
                 buckets, more than {MAX_BUCKETS}"
            )));
        }
        Ok(Distribution {
            min,
            max,
            bucket_size,
            shift: if bucket_size.is_power_of_two() {
                bucket_size.trailing_zeros()
            } else {
                u32::MAX
            },
            buckets: vec![0; n as usize].into_boxed_slice(),
            samples: 0,
            sum: 0,
            squares: 0,
            underflows: 0,
            overflows: 0,
            min_value: i64::MAX,
            max_value: i64::MIN,
        })
    }

    /// Counts `v` once.
    #[inline]
    pub fn sample(&mut self, v: i64) {
        self.sample_n(v, 1);
    }

    /// Counts `v` `n` times (nothing when `n` is 0).
    #[inline]
    pub fn sample_n(&mut self, v: i64, n: u64) {
        if n == 0 {
            return;
        }
        if v < self.min {
            self.underflows = self.underflows.saturating_add(n);
        } else if v > self.max {
            self.overflows = self.overflows.saturating_add(n);
        } else {
            // `v - min` fits in a u64 even where it overflows an i64.
            let off = v.wrapping_sub(self.min) as u64;
            let i = if self.shift < u64::BITS {
                off >> self.shift
            } else {
                off / self.bucket_size
            } as usize;
            self.buckets[i] = self.buckets[i].saturating_add(n);
        }
        self.min_value = self.min_value.min(v);
        self.max_value = self.max_value.max(v);
        self.samples = self.samples.saturating_add(n);
        // |v * n| < 2^127: the product itself cannot overflow.
        self.sum = self.sum.saturating_add(i128::from(v) * i128::from(n));
        let square = u128::from(v.unsigned_abs()).pow(2);
        self.squares = self
            .squares
            .saturating_add(square.saturating_mul(u128::from(n)));
    }

    pub fn min(&self) -> i64 {
        self.min
    }

    pub fn max(&self) -> i64 {
        self.max
    }

    pub fn bucket_size(&self) -> u64 {
        self.bucket_size
    }

    /// The count of each bucket, lowest first.
    pub fn buckets(&self) -> &[u64] {
        &self.buckets
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The sum of every value sampled.
    pub fn sum(&self) -> i128 {
        self.sum
    }

    /// The sum of the squares of every value sampled.
    pub fn squares(&self) -> u128 {
        self.squares
    }

    pub fn underflows(&self) -> u64 {
        self.underflows
    }

    pub fn overflows(&self) -> u64 {
        self.overflows
    }

    /// The smallest value sampled, if any.
    pub fn min_value(&self) -> Option<i64> {
        (self.min_value <= self.max_value).then_some(self.min_value)
    }

    /// The largest value sampled, if any.
    pub fn max_value(&self) -> Option<i64> {
        (self.min_value <= self.max_value).then_some(self.max_value)
    }

    /// The mean as gem5 prints it: NaN without samples.
    pub fn mean(&self) -> f64 {
        if self.samples == 0 {
            return f64::NAN;
        }
        self.sum as f64 / self.samples as f64
    }

    /// The sample standard deviation by gem5's formula, in doubles as gem5 computes it:
    /// NaN without samples and with one (0 / 0).
    pub fn stdev(&self) -> f64 {
        if self.samples == 0 {
            return f64::NAN;
        }
        let (n, s, q) = (self.samples as f64, self.sum as f64, self.squares as f64);
        ((n * q - s * s) / (n * (n - 1.0))).sqrt()
    }

    /// Underflows, bucket counts and overflows together: gem5's `::total`.
    pub fn total(&self) -> u128 {
        let counted: u128 = self.buckets.iter().map(|&c| u128::from(c)).sum();
        counted + u128::from(self.underflows) + u128::from(self.overflows)
    }

    /// The lowest and highest value bucket `i` counts (the last one cut at `max`).
    pub fn bucket_range(&self, i: usize) -> (i64, i64) {
        let lo = i128::from(self.min) + i as i128 * i128::from(self.bucket_size);
        let hi = (lo + i128::from(self.bucket_size) - 1).min(i128::from(self.max));
        // Bucket `i` starts at or below `max`, so both fit.
        (lo as i64, hi as i64)
    }

    /// Bucket `i`'s name as gem5 prints it after `::`: `lo-hi`, or `lo` alone when the
    /// bucket holds one value, each number as C++ streams a double (`1e+06` from a
    /// million on).
    pub fn bucket_label(&self, i: usize) -> String {
        let (lo, hi) = self.bucket_range(i);
        if lo < hi {
            format!("{}-{}", cpp_double(lo as f64), cpp_double(hi as f64))
        } else {
            cpp_double(lo as f64)
        }
    }

    /// Whether `other` counts the same buckets.
    fn same_shape(&self, other: &Distribution) -> Result<(), DistError> {
        let shape = |d: &Distribution| (d.min, d.max, d.bucket_size);
        if shape(self) == shape(other) {
            return Ok(());
        }
        Err(DistError(format!(
            "their buckets differ: [{}, {}] by {} and [{}, {}] by {}",
            self.min, self.max, self.bucket_size, other.min, other.max, other.bucket_size
        )))
    }

    /// Adds `other`'s samples (the same buckets) to these, as if sampled here too.
    pub fn merge(&mut self, other: &Distribution) -> Result<(), DistError> {
        self.same_shape(other)?;
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a = a.saturating_add(*b);
        }
        self.samples = self.samples.saturating_add(other.samples);
        self.sum = self.sum.saturating_add(other.sum);
        self.squares = self.squares.saturating_add(other.squares);
        self.underflows = self.underflows.saturating_add(other.underflows);
        self.overflows = self.overflows.saturating_add(other.overflows);
        self.min_value = self.min_value.min(other.min_value);
        self.max_value = self.max_value.max(other.max_value);
        Ok(())
    }

    /// The samples taken after `start` (this distribution earlier in the same run): every
    /// count, the sum and the squares less their values then. The smallest and largest
    /// value stay this one's, the whole run's: single values cannot be taken back out.
    pub fn since(&self, start: &Distribution) -> Result<Distribution, DistError> {
        self.same_shape(start)?;
        let less = |what: &str, end: u128, begin: u128| {
            end.checked_sub(begin)
                .ok_or_else(|| DistError(format!("{what} went down from {begin} to {end}")))
        };
        let count = |what: &str, end: u64, begin: u64| {
            less(what, end.into(), begin.into()).map(|d| d as u64)
        };
        let mut buckets = self.buckets.clone();
        for (i, (b, s)) in buckets.iter_mut().zip(start.buckets.iter()).enumerate() {
            *b = count(&format!("bucket {}", self.bucket_label(i)), *b, *s)?;
        }
        Ok(Distribution {
            buckets,
            samples: count("samples", self.samples, start.samples)?,
            sum: self.sum - start.sum,
            squares: less("squares", self.squares, start.squares)?,
            underflows: count("underflows", self.underflows, start.underflows)?,
            overflows: count("overflows", self.overflows, start.overflows)?,
            ..self.clone()
        })
    }

    /// The lines gem5 prints for a `Distribution`, in its order: `samples`, `mean`,
    /// `stdev`, `underflows`, one per bucket, `overflows`, `min_value`, `max_value`,
    /// `total`. Underflows, buckets and overflows carry their share of the total (pdf) and
    /// the running sum of those shares (cdf), unless the total is 0. The smallest and
    /// largest value are 0 before any sample, as gem5 prints them.
    pub fn lines(&self) -> Vec<DistLine> {
        let total = self.total();
        let mut cdf = 0.0;
        let mut share = |count: u64| {
            if total == 0 {
                return (None, None);
            }
            let pdf = count as f64 / total as f64;
            cdf += pdf;
            (Some(pdf * 100.0), Some(cdf * 100.0))
        };
        let plain = |field: &'static str, value: StatValue| DistLine {
            field: Cow::Borrowed(field),
            value,
            pdf: None,
            cdf: None,
        };
        let mut out = Vec::with_capacity(self.buckets.len() + 8);
        out.push(plain("samples", StatValue::Int(self.samples)));
        out.push(plain("mean", StatValue::Float(self.mean())));
        out.push(plain("stdev", StatValue::Float(self.stdev())));
        let counted = std::iter::once((Cow::Borrowed("underflows"), self.underflows))
            .chain(
                (0..self.buckets.len())
                    .map(|i| (Cow::Owned(self.bucket_label(i)), self.buckets[i])),
            )
            .chain(std::iter::once((
                Cow::Borrowed("overflows"),
                self.overflows,
            )));
        for (field, count) in counted {
            let (pdf, cdf) = share(count);
            out.push(DistLine {
                field,
                value: StatValue::Int(count),
                pdf,
                cdf,
            });
        }
        let sampled = self.min_value <= self.max_value;
        let (lo, hi) = if sampled {
            (self.min_value, self.max_value)
        } else {
            (0, 0)
        };
        out.push(plain("min_value", signed(lo)));
        out.push(plain("max_value", signed(hi)));
        out.push(plain("total", wide(total)));
        out
    }

    /// The distribution as a JSON object: its configuration (`min`, `max`,
    /// `bucket_size`), the printed fields by name, `buckets` as `{lo, hi, count}` objects,
    /// and `sum` and `squares`. Non-finite numbers are `null`.
    pub fn to_json(&self) -> serde_json::Value {
        let buckets: Vec<serde_json::Value> = (0..self.buckets.len())
            .map(|i| {
                let (lo, hi) = self.bucket_range(i);
                serde_json::json!({ "lo": lo, "hi": hi, "count": self.buckets[i] })
            })
            .collect();
        let mut obj = serde_json::Map::new();
        obj.insert("min".into(), self.min.into());
        obj.insert("max".into(), self.max.into());
        obj.insert("bucket_size".into(), self.bucket_size.into());
        for line in self.lines() {
            let value = match line.value {
                StatValue::Int(i) => serde_json::Value::from(i),
                StatValue::Float(f) => serde_json::Value::from(f),
            };
            // Buckets (owned labels) go in `buckets` below, with their bounds.
            if let Cow::Borrowed(key) = line.field {
                obj.insert(key.to_string(), value);
            }
        }
        obj.insert("buckets".into(), buckets.into());
        obj.insert("sum".into(), json_number(self.sum));
        obj.insert("squares".into(), json_unsigned(self.squares));
        serde_json::Value::Object(obj)
    }
}

/// A signed value: an integer when it is not negative, else a float, as the `stats.txt`
/// reader reads `-7` back.
fn signed(v: i64) -> StatValue {
    u64::try_from(v).map_or(StatValue::Float(v as f64), StatValue::Int)
}

/// A count wider than 64 bits: exact while it fits.
fn wide(v: u128) -> StatValue {
    u64::try_from(v).map_or(StatValue::Float(v as f64), StatValue::Int)
}

/// An exact JSON integer while it fits in 64 bits, else the nearest double.
fn json_number(v: i128) -> serde_json::Value {
    i64::try_from(v).map_or((v as f64).into(), serde_json::Value::from)
}

/// The same for an unsigned sum.
fn json_unsigned(v: u128) -> serde_json::Value {
    u64::try_from(v).map_or((v as f64).into(), serde_json::Value::from)
}

/// `x` as C++'s `ostream << double` prints it by default, printf's `%g`: six significant
/// digits, trailing zeros dropped, an exponent (`1e+06`) outside `[1e-4, 1e6)`.
pub(crate) fn cpp_double(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` writes an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` writes an integer exponent");
    if (-4..6).contains(&exp) {
        let decimals = usize::try_from(5 - exp).unwrap_or(0);
        trim_zeros(&format!("{x:.decimals$}")).to_string()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim_zeros(mantissa), exp.unsigned_abs())
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A value as gem5's `ValueToString` prints a statistic of default precision: `nan`, a
/// whole number without decimals, anything else with six.
pub(crate) fn gem5_number(v: &StatValue) -> String {
    match *v {
        StatValue::Int(i) => i.to_string(),
        StatValue::Float(f) if f.is_nan() => "nan".to_string(),
        StatValue::Float(f) if f == f.round() => format!("{f:.0}"),
        StatValue::Float(f) => format!("{f:.6}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(min: i64, max: i64, size: u64) -> Distribution {
        Distribution::new(min, max, size).unwrap()
    }

    /// `(field, value as printed, pdf, cdf)` of every line.
    fn printed(d: &Distribution) -> Vec<(String, String, Option<f64>, Option<f64>)> {
        d.lines()
            .into_iter()
            .map(|l| (l.field.into_owned(), gem5_number(&l.value), l.pdf, l.cdf))
            .collect()
    }

    fn field(d: &Distribution, name: &str) -> String {
        let lines = printed(d);
        let line = lines.iter().find(|l| l.0 == name);
        line.unwrap_or_else(|| panic!("no {name}")).1.clone()
    }

    #[test]
    fn bad_shapes_are_errors() {
        let err = |min, max, size| Distribution::new(min, max, size).unwrap_err().0;
        assert_eq!(
            err(0, 9, 0),
            "distribution bucket size must be at least 1, got 0"
        );
        assert_eq!(
            err(5, 4, 1),
            "distribution range [5, 4] is empty: max is below min"
        );
        assert_eq!(
            err(i64::MIN, i64::MAX, 1),
            format!(
                "distribution range [{}, {}] in buckets of 1 needs 18446744073709551616 \
                 buckets, more than 1048576",
                i64::MIN,
                i64::MAX
            )
        );
        assert_eq!(d(0, (1 << 20) - 1, 1).buckets().len(), 1 << 20);
        assert!(Distribution::new(0, 1 << 20, 1).is_err());
        // The widest range in two buckets: the arithmetic stays in range.
        let mut wide = d(i64::MIN, i64::MAX, u64::MAX);
        assert_eq!(wide.buckets().len(), 2);
        assert_eq!(wide.bucket_range(1), (i64::MAX, i64::MAX));
        wide.sample(i64::MIN);
        wide.sample(i64::MAX);
        assert_eq!(wide.buckets(), [1, 1]);
        assert_eq!(wide.sum(), -1);
    }

    proptest::proptest! {
        /// A power-of-two bucket size finds its bucket by a shift: the bucket is the one
        /// `bucket_range` names, as a division finds it for any other size.
        #[test]
        fn each_sample_lands_in_the_bucket_whose_range_holds_it(
            min in -1_000_000i64..1_000_000,
            width in 1u64..1_000_000,
            log in 0u32..21,
            odd in 0u64..2,
            values in proptest::collection::vec(-2_000_000i64..2_000_000, 1..40),
        ) {
            let size = (1u64 << log) + odd * 2;
            let max = min + width as i64;
            let mut dist = d(min, max, size);
            for &v in &values {
                let before = dist.buckets().to_vec();
                dist.sample(v);
                let changed: Vec<usize> = (0..before.len())
                    .filter(|&i| before[i] != dist.buckets()[i])
                    .collect();
                if v < min || v > max {
                    proptest::prop_assert!(changed.is_empty());
                } else {
                    proptest::prop_assert_eq!(changed.len(), 1);
                    let (lo, hi) = dist.bucket_range(changed[0]);
                    proptest::prop_assert!(lo <= v && v <= hi, "{} outside [{}, {}]", v, lo, hi);
                }
            }
        }
    }

    #[test]
    fn no_samples_print_as_gem5_prints_them() {
        let e = d(0, 3, 1);
        assert!(e.mean().is_nan() && e.stdev().is_nan());
        assert_eq!((e.min_value(), e.max_value()), (None, None));
        let lines = printed(&e);
        let names: Vec<&str> = lines.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "samples",
                "mean",
                "stdev",
                "underflows",
                "0",
                "1",
                "2",
                "3",
                "overflows",
                "min_value",
                "max_value",
                "total"
            ]
        );
        let values: Vec<&str> = lines.iter().map(|l| l.1.as_str()).collect();
        assert_eq!(
            values,
            ["0", "nan", "nan", "0", "0", "0", "0", "0", "0", "0", "0", "0"]
        );
        // A total of 0 leaves every pdf and cdf blank.
        assert!(lines.iter().all(|l| l.2.is_none() && l.3.is_none()));
    }

    #[test]
    fn values_below_min_and_above_max() {
        let mut q = d(10, 99, 25);
        for v in [3, 12, 20, 34, 35, 61, 99, 150, 61, 40] {
            q.sample(v);
        }
        q.sample_n(-7, 2);
        q.sample_n(1000, 0);
        assert_eq!((q.underflows(), q.overflows()), (3, 1));
        assert_eq!(q.buckets(), [3, 2, 2, 1]);
        assert_eq!((q.min_value(), q.max_value()), (Some(-7), Some(150)));
        assert_eq!((q.samples(), q.sum(), q.total()), (12, 501, 12));
        assert_eq!(field(&q, "min_value"), "-7");
        assert_eq!(field(&q, "max_value"), "150");
        assert_eq!(field(&q, "mean"), "41.750000");
        let lines = printed(&q);
        let under = &lines[3];
        assert_eq!((under.2, under.3), (Some(25.0), Some(25.0)));
        let over = lines.iter().find(|l| l.0 == "overflows").unwrap();
        assert!((over.3.unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn bucket_labels() {
        let q = d(10, 99, 25);
        let labels: Vec<String> = (0..4).map(|i| q.bucket_label(i)).collect();
        // The last bucket is cut at max.
        assert_eq!(labels, ["10-34", "35-59", "60-84", "85-99"]);
        let one = d(-2, 1, 1);
        let labels: Vec<String> = (0..4).map(|i| one.bucket_label(i)).collect();
        assert_eq!(labels, ["-2", "-1", "0", "1"]);
        let neg = d(-8, 7, 4);
        assert_eq!(neg.bucket_label(0), "-8--5");
        // A bucket of width 2 cut to one value at max.
        assert_eq!(d(0, 4, 2).bucket_label(2), "4");
        let big = d(0, 2_999_999, 1_000_000);
        assert_eq!(big.bucket_label(1), "1e+06-2e+06");
        for (x, s) in [
            (0.0, "0"),
            (999_999.0, "999999"),
            (1e6, "1e+06"),
            (1_234_567.0, "1.23457e+06"),
            (-1_500_000.0, "-1.5e+06"),
            (123_456.0, "123456"),
            (1e20, "1e+20"),
            (0.5, "0.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
        ] {
            assert_eq!(cpp_double(x), s, "{x}");
        }
    }

    #[test]
    fn mean_and_stdev_follow_gem5() {
        let mut q = d(0, 9, 1);
        q.sample(4);
        assert_eq!(q.mean(), 4.0);
        // One sample: gem5 divides 0 by 0.
        assert!(q.stdev().is_nan());
        assert_eq!(field(&q, "mean"), "4");
        assert_eq!(field(&q, "stdev"), "nan");
        for v in [2, 4, 4, 5, 5, 7, 9] {
            q.sample(v);
        }
        assert_eq!(q.mean(), 5.0);
        assert!((q.stdev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(field(&q, "stdev"), "2.138090");
    }

    #[test]
    fn huge_counts_saturate_and_stay_exact_in_wide_sums() {
        let mut q = d(0, 9, 1);
        q.sample_n(3, u64::MAX);
        q.sample_n(-1, u64::MAX);
        assert_eq!(q.samples(), u64::MAX);
        assert_eq!((q.buckets()[3], q.underflows()), (u64::MAX, u64::MAX));
        let m = u128::from(u64::MAX);
        assert_eq!(q.total(), 2 * m);
        assert_eq!(q.sum(), 2 * i128::from(u64::MAX));
        assert_eq!(q.squares(), 10 * m);
        q.sample(3);
        assert_eq!(q.buckets()[3], u64::MAX);
        assert_eq!(field(&q, "total"), "36893488147419103232");
        assert_eq!(field(&q, "samples"), "18446744073709551615");
        let mut x = d(0, 1, 1);
        x.sample_n(i64::MIN, u64::MAX);
        x.sample_n(i64::MIN, u64::MAX);
        assert_eq!(x.sum(), i128::MIN);
        assert_eq!(x.squares(), u128::MAX);
    }

    #[test]
    fn since_and_merge() {
        let mut q = d(0, 9, 5);
        q.sample(1);
        q.sample(20);
        let start = q.clone();
        q.sample(6);
        q.sample_n(-3, 2);
        let r = q.since(&start).unwrap();
        assert_eq!((r.samples(), r.sum(), r.squares()), (3, 0, 54));
        assert_eq!(r.buckets(), [0, 1]);
        assert_eq!((r.underflows(), r.overflows()), (2, 0));
        // The extremes stay the whole run's.
        assert_eq!((r.min_value(), r.max_value()), (Some(-3), Some(20)));
        assert_eq!(
            start.since(&q).unwrap_err().0,
            "bucket 5-9 went down from 1 to 0"
        );
        assert_eq!(
            q.since(&d(0, 9, 1)).unwrap_err().0,
            "their buckets differ: [0, 9] by 5 and [0, 9] by 1"
        );
        let mut m = start.clone();
        m.merge(&r).unwrap();
        assert_eq!(m, q);
        let mut e = d(0, 9, 5);
        e.merge(&d(0, 9, 5)).unwrap();
        assert_eq!(e.min_value(), None);
        assert!(e.merge(&d(0, 8, 5)).is_err());
    }

    #[test]
    fn json_object() {
        let mut q = d(0, 4, 2);
        q.sample(1);
        q.sample(4);
        q.sample(9);
        let j = q.to_json();
        assert_eq!(j["bucket_size"], 2);
        assert_eq!(j["samples"], 3);
        assert_eq!(
            j["buckets"][2],
            serde_json::json!({"lo": 4, "hi": 4, "count": 1})
        );
        assert_eq!(j["overflows"], 1);
        assert_eq!(
            (j["sum"].clone(), j["squares"].clone()),
            (14.into(), 98.into())
        );
        assert_eq!(j["total"], 3);
        assert!(j["stdev"].is_f64());
        assert!(d(0, 1, 1).to_json()["mean"].is_null());
    }
}
