//! Statistics over a part of a run: gem5's `m5 resetstats`, done by difference. The run
//! takes a registry when its timed region starts and one at the end; each statistic's
//! [`Accrual`] says how the region's value follows from the two.

use super::{Accrual, Distribution, Stat, StatValue, StatsRegistry};

impl StatsRegistry {
    /// The statistics of the part of the run after `start` (a registry of the same run,
    /// taken earlier): counters less their value at the start, levels as they are, ratios
    /// of the growth of their parts, distributions bucket by bucket
    /// ([`Distribution::since`]). A statistic registered only at the end started at 0.
    /// A counter that shrank is an error naming it: it was not a counter.
    pub fn since(&self, start: &StatsRegistry) -> Result<StatsRegistry, String> {
        let mut out = StatsRegistry::new();
        for s in &self.stats {
            let before = start.get(&s.name);
            let (value, accrual) = match &s.accrual {
                Accrual::Counter => (growth(s, before)?, Accrual::Counter),
                Accrual::Level => (s.value.clone(), Accrual::Level),
                Accrual::Ratio { num, den } => {
                    let (n0, d0) = match before.map(|b| &b.accrual) {
                        Some(Accrual::Ratio { num, den }) => (*num, *den),
                        _ => (0.0, 0.0),
                    };
                    let (num, den) = (num - n0, den - d0);
                    let value = if den > 0.0 { num / den } else { 0.0 };
                    (StatValue::Float(value), Accrual::Ratio { num, den })
                }
                Accrual::Distribution(d) => {
                    let d = dist_growth(s, d, before)?;
                    (
                        StatValue::Int(d.samples()),
                        Accrual::Distribution(Box::new(d)),
                    )
                }
            };
            out.push_as(s.name.clone(), value, &s.desc, &s.unit, accrual);
        }
        Ok(out)
    }
}

/// A distribution's samples since `before`.
fn dist_growth(
    end: &Stat,
    d: &Distribution,
    before: Option<&Stat>,
) -> Result<Distribution, String> {
    match before.map(|b| &b.accrual) {
        None => Ok(d.clone()),
        Some(Accrual::Distribution(b)) => d.since(b).map_err(|e| {
            format!(
                "distribution {} from the region's start to its end: {e}",
                end.name
            )
        }),
        Some(_) => Err(format!(
            "statistic {} is a distribution at the end of the run but was not one at the start",
            end.name
        )),
    }
}

/// A counter's growth since `before`.
fn growth(end: &Stat, before: Option<&Stat>) -> Result<StatValue, String> {
    let shrank = |a: &dyn std::fmt::Display, b: &dyn std::fmt::Display| {
        format!(
            "statistic {} went down from {a} to {b} during the run: it is not a counter",
            end.name
        )
    };
    Ok(match (&end.value, before.map(|b| &b.value)) {
        (v, None) => v.clone(),
        (StatValue::Int(e), Some(StatValue::Int(b))) => {
            StatValue::Int(e.checked_sub(*b).ok_or_else(|| shrank(b, e))?)
        }
        (e, Some(b)) => {
            let d = e.as_f64() - b.as_f64();
            if d < 0.0 {
                return Err(shrank(b, e));
            }
            StatValue::Float(d)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(events: u64, max: u64, latency: f64, msgs: f64, extra: bool) -> StatsRegistry {
        let mut r = StatsRegistry::new();
        r.scalar("sim.events", events, "Events", "Count");
        r.level("sim.max_queue", max, "Largest queue", "Count");
        r.ratio("net.avg_latency", latency, msgs, "Average latency", "Cycle");
        r.float("host.seconds", msgs / 10.0, "Host time", "Second");
        if extra {
            r.scalar("late", 4, "Registered only once nonzero", "Count");
        }
        r
    }

    #[test]
    fn a_region_subtracts_counters_keeps_levels_and_recomputes_ratios() {
        let start = at(100, 7, 300.0, 10.0, false);
        let end = at(250, 9, 1500.0, 50.0, true);
        let r = end.since(&start).unwrap();
        let v = |n: &str| r.get(n).unwrap().value.clone();
        assert_eq!(v("sim.events"), StatValue::Int(150));
        assert_eq!(v("sim.max_queue"), StatValue::Int(9));
        // (1500 - 300) / (50 - 10), not 1500 / 50.
        assert_eq!(v("net.avg_latency"), StatValue::Float(30.0));
        assert_eq!(v("host.seconds"), StatValue::Float(4.0));
        assert_eq!(v("late"), StatValue::Int(4));
        let names: Vec<&str> = r.stats().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "sim.events",
                "sim.max_queue",
                "net.avg_latency",
                "host.seconds",
                "late"
            ]
        );
    }

    #[test]
    fn a_region_of_a_distribution_is_its_growth_bucket_by_bucket() {
        let mut d = Distribution::new(0, 7, 4).unwrap();
        d.sample_n(2, 3);
        d.sample(9);
        let reg = |d: &Distribution| {
            let mut r = StatsRegistry::new();
            r.dist("q.depth", d, "Queue depth", "Count");
            r
        };
        let start = reg(&d);
        d.sample(5);
        d.sample_n(-1, 2);
        let r = reg(&d).since(&start).unwrap();
        assert_eq!(r.get("q.depth").unwrap().value, StatValue::Int(3));
        let q = r.distribution("q.depth").unwrap();
        assert_eq!(q.buckets(), [0, 1]);
        assert_eq!((q.underflows(), q.overflows(), q.sum()), (2, 0, 3));
        // Whole-run extremes, like a level.
        assert_eq!((q.min_value(), q.max_value()), (Some(-1), Some(9)));
        // Registered only at the end: the whole run's.
        let whole = reg(&d).since(&StatsRegistry::new()).unwrap();
        assert_eq!(whole.distribution("q.depth"), Some(&d));
        let e = start.since(&reg(&d)).unwrap_err();
        assert_eq!(
            e,
            "distribution q.depth from the region's start to its end: bucket 4-7 went down \
             from 1 to 0"
        );
        let mut other = StatsRegistry::new();
        other.scalar("q.depth", 1, "", "Count");
        let e = reg(&d).since(&other).unwrap_err();
        assert!(e.contains("q.depth is a distribution at the end"), "{e}");
    }

    #[test]
    fn a_counter_that_shrank_is_named() {
        let e = at(5, 0, 0.0, 0.0, false)
            .since(&at(6, 0, 0.0, 0.0, false))
            .unwrap_err();
        assert!(e.contains("sim.events went down from 6 to 5"), "{e}");
    }
}
