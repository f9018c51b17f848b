//! The rows of `moped matching` that feed an engine alone, without the CMP around it: its
//! own cycles, at its own clock.
//!
//! - `engine` rows: the unload benchmark's queue operations at the receiver's matching
//!   MOPED (every receive posted, then the sends, last posted first), with the sources the
//!   CMP's 16 ranks give (15) beside the two-level queue paper's (64 to 10,000 distinct
//!   sources), to depths no descriptor ID on the CMP can name (30,000).
//! - `setting` rows: the preposted latency benchmark in the two-level queue paper's own
//!   setting (Xiong et al., section IV): the match of the last of `depth` posted receives,
//!   at the engine's clock, plus the network time both of its testbeds take and, for the
//!   ALPU, the offload round trip of the NIC it sits in.

use super::{Matcher, Point, Row};
use crate::envelope::{Envelope, Kind, Peer, Tag};
use crate::moped::desc::{DescTable, Descriptor, MAX_CAPACITY};
use crate::moped::matching::{MatchUnit, MatcherKind, MatchingParams};
use crate::moped::DescId;
use crate::workload::queue::{QueueBenchmark, Sources};

/// Unload depths of the engine-level rows.
pub const UNLOAD_ENGINE_DEPTHS: [u32; 6] = [500, 1000, 4000, 10_000, 20_000, 30_000];
/// Distinct sources of the engine-level unload: the 15 senders of the CMP's 16 ranks, to
/// set beside its rows, and the two-level queue paper's range, 64 to 10,000.
pub const UNLOAD_SENDERS: [u32; 4] = [15, 64, 1000, 10_000];
/// The deepest engine-level unload of `microcoded`: its searches run the match program on
/// the interpreter (about 1.3 M unit cycles per host second), and unloading 10,000 entries
/// last-posted-first would run 400 M cycles, 30,000 some 3.6 G.
pub const MICROCODED_ENGINE_DEPTH_MAX: u32 = 4000;
/// The network time of a message in both testbeds Xiong et al. compare: the ALPU's
/// simulated 200 ns, "the same as our average network time" over their MGT links
/// (section IV.B).
pub const NETWORK_NS: f64 = 200.0;

/// The engine-level and setting rows of every engine among `engines`.
pub fn rows(engines: &[Matcher], params: &MatchingParams, core_mhz: f64, quick: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    for &engine in engines {
        let Matcher::Engine(kind) = engine else {
            continue;
        };
        let mhz = params.mhz(kind, core_mhz);
        for depth in super::PREPOSTED_DEPTHS
            .into_iter()
            .filter(|&d| !quick || d <= 300)
        {
            rows.push(setting_row(kind, params, depth, mhz, core_mhz));
        }
        let deepest = match kind {
            MatcherKind::Microcoded => MICROCODED_ENGINE_DEPTH_MAX,
            _ => u32::MAX,
        };
        for sources in [Sources::Uniform, Sources::Skewed] {
            for senders in UNLOAD_SENDERS.into_iter().filter(|&s| !quick || s <= 64) {
                for depth in UNLOAD_ENGINE_DEPTHS
                    .into_iter()
                    .filter(|&d| (!quick || d <= 1000) && d <= deepest)
                {
                    let (total, read) =
                        unload_engine_cycles(kind, params, depth, sources, senders as usize + 1);
                    let point = Point {
                        benchmark: QueueBenchmark::Unload,
                        depth,
                        position: depth,
                        sources: Some(sources),
                    };
                    rows.push(Row {
                        senders,
                        engine_cycles: Some(total as f64 / f64::from(depth)),
                        total_engine_cycles: Some(total),
                        traversed: Some(read as f64 / f64::from(depth)),
                        ..Row::alone(engine, point, "engine", mhz, core_mhz)
                    });
                }
            }
        }
    }
    rows
}

/// The preposted benchmark at `depth` in the two-level queue paper's setting.
fn setting_row(
    kind: MatcherKind,
    params: &MatchingParams,
    depth: u32,
    mhz: f64,
    core_mhz: f64,
) -> Row {
    let (cycles, read) = preposted_engine_cycles(kind, params, depth);
    let offload = match kind {
        MatcherKind::Alpu => params.alpu.offload_ns,
        _ => 0.0,
    };
    let point = Point {
        benchmark: QueueBenchmark::Preposted,
        depth,
        position: depth,
        sources: None,
    };
    Row {
        senders: 1,
        engine_cycles: Some(cycles as f64),
        total_engine_cycles: Some(cycles),
        traversed: Some(read as f64),
        setting_ns: Some(NETWORK_NS + offload + cycles as f64 * 1000.0 / mhz),
        ..Row::alone(Matcher::Engine(kind), point, "setting", mhz, core_mhz)
    }
}

/// The engine's cycles, and the entries it read, to match a send with the last of `depth`
/// receives posted from its source (tags 1 to `depth`): the preposted latency
/// benchmark's measured match (Underwood and Brightwell, ICPP 2004).
pub fn preposted_engine_cycles(
    kind: MatcherKind,
    params: &MatchingParams,
    depth: u32,
) -> (u64, u64) {
    let Some((mut unit, mut table)) = fresh(kind, params, depth) else {
        return (0, 0);
    };
    for k in 1..=depth {
        arrive(
            &mut unit,
            &mut table,
            0,
            envelope(Kind::Recv, Peer::Rank(1), k),
        );
    }
    // The benchmark's message arrives long after the receives were posted.
    unit.quiesce();
    arrive(
        &mut unit,
        &mut table,
        1,
        envelope(Kind::Send, Peer::Rank(0), depth),
    )
}

/// The engine's busy cycles, and the entries it read, to post `depth` receives (receive
/// `k` from the source `sources` gives it among `ranks` ranks, tag `k`) and then match
/// each, the last posted first: the unload benchmark's queue operations at the receiver's
/// matching MOPED.
pub fn unload_engine_cycles(
    kind: MatcherKind,
    params: &MatchingParams,
    depth: u32,
    sources: Sources,
    ranks: usize,
) -> (u64, u64) {
    let Some((mut unit, mut table)) = fresh(kind, params, depth) else {
        return (0, 0);
    };
    let src = |k: u32| sources.source(k, ranks) as u16;
    let (mut cycles, mut read) = (0, 0);
    let arrivals = (1..=depth)
        .map(|k| (0, envelope(Kind::Recv, Peer::Rank(src(k)), k)))
        .chain(
            (1..=depth)
                .rev()
                .map(|k| (src(k), envelope(Kind::Send, Peer::Rank(0), k))),
        );
    for (rank, env) in arrivals {
        let (c, r) = arrive(&mut unit, &mut table, rank, env);
        cycles += c;
        read += r;
    }
    (cycles, read)
}

/// An empty engine of `kind` and a descriptor table for `depth` entries and one more.
fn fresh(kind: MatcherKind, params: &MatchingParams, depth: u32) -> Option<(MatchUnit, DescTable)> {
    let capacity = (depth as usize + 1).clamp(1, MAX_CAPACITY);
    let table = DescTable::new(capacity).ok()?;
    Some((MatchUnit::new(kind, params), table))
}

fn envelope(kind: Kind, peer: Peer, tag: u32) -> Envelope {
    Envelope {
        kind,
        peer,
        context: 0,
        tag: Tag::Tag(tag),
    }
}

/// One arrival at the engine and its check; a matched pair leaves the table. The cycles
/// the check kept the engine busy and the entries it read.
fn arrive(unit: &mut MatchUnit, table: &mut DescTable, rank: u16, env: Envelope) -> (u64, u64) {
    if let Ok(mut d) = Descriptor::complete(0, rank, 0, env, 0, 8) {
        d.link = Some(DescId { moped: 0, index: 0 });
        if unit.arrive(table, d).is_err() {
            return (0, 0);
        }
    }
    let Some(step) = unit.step(table) else {
        return (0, 0);
    };
    if let Some((s, r)) = step.matched {
        table.free(s);
        table.free(r);
    }
    (step.cycles.max(1), step.traversed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preposted_match_reads_the_lists_past_the_cam() {
        let p = MatchingParams::default();
        // Within the CAM one compare; past it the list's elements, 3 cycles each, plus
        // the compare that missed and the refill-free removal.
        let (within, read) = preposted_engine_cycles(MatcherKind::Cam, &p, 256);
        assert_eq!((within, read), (1, 0));
        let (past, read) = preposted_engine_cycles(MatcherKind::Cam, &p, 300);
        assert_eq!(read, 44);
        assert_eq!(past, 1 + 3 * 44);
        // Four lists share the 44 elements: the longest holds 11.
        let (four, _) = preposted_engine_cycles(MatcherKind::Cam4, &p, 300);
        assert_eq!(four, 1 + 3 * 11);
    }

    #[test]
    fn more_senders_spread_the_hash_over_more_buckets() {
        let p = MatchingParams::default();
        let at = |senders: usize| {
            unload_engine_cycles(MatcherKind::Hash, &p, 4000, Sources::Uniform, senders + 1).1
        };
        // 15 sources fill 15 of the 64 buckets, 64 fill all of them.
        assert!(at(64) * 3 < at(15), "{} {}", at(64), at(15));
    }
}
