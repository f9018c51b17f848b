//! The L1 data prefetcher: which lines to fetch after a demand access (`l1.prefetch`).
//!
//! It is trained by demand misses and by the first demand hit on a line a prefetch brought
//! (tagged prefetching, so a scan that hits its prefetched lines keeps the stream ahead of
//! it). `next_line` fetches the lines `distance` to `distance + degree - 1` after the
//! trigger; `stride` keeps, per 4 KiB page, the last miss and the stride from the one
//! before (no program counters exist in this model, so pages stand for streams), and
//! fetches along a stride seen twice in a row. Neither crosses the trigger's page: the
//! addresses are physical, and the next frame may be another process's.
//!
//! The controller issues the lines as loads with no core waiting (see
//! `CacheCtrl::prefetch`); this file only chooses them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::mem::{LineAddr, LINE_BYTES};

/// The L1 data prefetcher (`l1.prefetch`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PrefetchKind {
    /// No prefetcher (the paper's Table 1 names none).
    #[default]
    None,
    /// On a demand miss, and on the first demand hit on a prefetched line, the lines
    /// `distance` to `distance + degree - 1` ahead.
    NextLine,
    /// Strides between demand misses within a 4 KiB page; after two equal ones, the lines
    /// that many strides ahead.
    Stride,
}

impl PrefetchKind {
    /// The name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            PrefetchKind::None => "none",
            PrefetchKind::NextLine => "next_line",
            PrefetchKind::Stride => "stride",
        }
    }
}

impl std::str::FromStr for PrefetchKind {
    type Err = String;

    fn from_str(s: &str) -> Result<PrefetchKind, String> {
        [
            PrefetchKind::None,
            PrefetchKind::NextLine,
            PrefetchKind::Stride,
        ]
        .into_iter()
        .find(|k| k.name() == s)
        .ok_or_else(|| {
            format!("unknown prefetcher `{s}` (l1.prefetch): expected none, next_line or stride")
        })
    }
}

/// Pages whose strides the stride prefetcher tracks at once.
pub const STRIDE_ENTRIES: usize = 16;

/// What the prefetcher is configured to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefetchParams {
    pub kind: PrefetchKind,
    pub degree: u32,
    pub distance: u32,
    /// The page size: no prefetch leaves its trigger's page (the OS's, given by the
    /// caller, as this layer stands below the OS model).
    pub page_bytes: u64,
}

impl PrefetchParams {
    /// No prefetcher.
    pub const NONE: PrefetchParams = PrefetchParams {
        kind: PrefetchKind::None,
        degree: 1,
        distance: 1,
        page_bytes: 0,
    };
}

impl Default for PrefetchParams {
    fn default() -> Self {
        PrefetchParams::NONE
    }
}

/// One page's stream: the last line trained on and the stride (in lines) before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stream {
    page: u64,
    last: i64,
    stride: i64,
    /// When it was last used, for LRU replacement.
    used: u64,
}

/// The prefetcher's state.
#[derive(Debug, Default)]
pub struct Prefetcher {
    pub params: PrefetchParams,
    streams: Vec<Stream>,
    clock: u64,
}

crate::reuse::clone_by_fields!(Prefetcher {
    params,
    streams,
    clock,
});

/// A line's number (its address over the line size).
fn number(line: LineAddr) -> i64 {
    (line / LINE_BYTES as u64) as i64
}

impl Prefetcher {
    pub fn new(params: PrefetchParams) -> Prefetcher {
        Prefetcher {
            params,
            ..Prefetcher::default()
        }
    }

    pub fn enabled(&self) -> bool {
        self.params.kind != PrefetchKind::None
    }

    /// The lines to fetch after a demand miss on `line` (`tagged_hit`: after the first
    /// demand hit on a prefetched line), nearest first, within its page.
    pub fn train(&mut self, line: LineAddr, tagged_hit: bool) -> Vec<LineAddr> {
        let stride = match self.params.kind {
            PrefetchKind::None => return Vec::new(),
            PrefetchKind::NextLine => 1,
            PrefetchKind::Stride => match self.stride_of(line, tagged_hit) {
                Some(s) => s,
                None => return Vec::new(),
            },
        };
        self.along(line, stride)
    }

    /// The lines `distance..distance + degree` strides from `line`, in its page.
    fn along(&self, line: LineAddr, stride: i64) -> Vec<LineAddr> {
        let page_bytes = self.params.page_bytes.max(LINE_BYTES as u64);
        let page = line / page_bytes;
        let first = self.params.distance as i64;
        (first..first + self.params.degree as i64)
            .filter_map(|k| {
                let n = number(line).checked_add(k.checked_mul(stride)?)?;
                let addr = u64::try_from(n).ok()?.checked_mul(LINE_BYTES as u64)?;
                (addr / page_bytes == page).then_some(addr)
            })
            .collect()
    }

    /// Trains the page's stream on `line`; the stride to follow, if it is confirmed: seen
    /// twice in a row on misses, or kept while tagged hits continue the stream.
    fn stride_of(&mut self, line: LineAddr, tagged_hit: bool) -> Option<i64> {
        self.clock += 1;
        let page_bytes = self.params.page_bytes.max(LINE_BYTES as u64);
        let (page, n, clock) = (line / page_bytes, number(line), self.clock);
        let Some(s) = self.streams.iter_mut().find(|s| s.page == page) else {
            self.insert(Stream {
                page,
                last: n,
                stride: 0,
                used: clock,
            });
            return None;
        };
        s.used = clock;
        let delta = n - s.last;
        s.last = n;
        if tagged_hit {
            return (s.stride != 0).then_some(s.stride);
        }
        let confirmed = delta != 0 && delta == s.stride;
        s.stride = delta;
        confirmed.then_some(delta)
    }

    /// Adds a stream, replacing the least recently used when the table is full.
    fn insert(&mut self, s: Stream) {
        if self.streams.len() < STRIDE_ENTRIES {
            self.streams.push(s);
            return;
        }
        if let Some(old) = self.streams.iter_mut().min_by_key(|s| s.used) {
            *old = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: u64 = LINE_BYTES as u64;
    /// The page the tests' prefetchers stay in (the simulator gives the OS's).
    const PAGE_BYTES: u64 = 4096;

    fn pf(kind: PrefetchKind, degree: u32, distance: u32) -> Prefetcher {
        Prefetcher::new(PrefetchParams {
            kind,
            degree,
            distance,
            page_bytes: PAGE_BYTES,
        })
    }

    #[test]
    fn next_line_fetches_the_lines_ahead_and_stops_at_the_page_end() {
        let mut p = pf(PrefetchKind::NextLine, 2, 1);
        assert_eq!(p.train(0x1000, false), [0x1000 + L, 0x1000 + 2 * L]);
        let mut far = pf(PrefetchKind::NextLine, 3, 4);
        assert_eq!(
            far.train(0x1000, true),
            [0x1000 + 4 * L, 0x1000 + 5 * L, 0x1000 + 6 * L]
        );
        // The page's last line but one: only the last.
        assert_eq!(p.train(0x2000 - 2 * L, false), [0x2000 - L]);
        assert!(p.train(0x2000 - L, false).is_empty());
        assert!(pf(PrefetchKind::None, 2, 1).train(0x1000, false).is_empty());
    }

    #[test]
    fn stride_needs_the_same_stride_twice_and_pages_train_apart() {
        let mut p = pf(PrefetchKind::Stride, 2, 1);
        let a = 0x4000;
        assert!(p.train(a, false).is_empty(), "a new stream");
        assert!(
            p.train(a + 3 * L, false).is_empty(),
            "one stride of 3 lines"
        );
        // Another page's miss in between does not disturb the first page's stream.
        assert!(p.train(0x9000, false).is_empty());
        assert_eq!(p.train(a + 6 * L, false), [a + 9 * L, a + 12 * L]);
        // A tagged hit continues along the stride.
        assert_eq!(p.train(a + 9 * L, true), [a + 12 * L, a + 15 * L]);
        // A different stride must be seen twice again.
        assert!(p.train(a + 10 * L, false).is_empty());
        assert_eq!(p.train(a + 11 * L, false), [a + 12 * L, a + 13 * L]);
        // Backwards strides work too.
        let b = 0x7000 + 40 * L;
        p.train(b, false);
        p.train(b - 2 * L, false);
        assert_eq!(p.train(b - 4 * L, false), [b - 6 * L, b - 8 * L]);
    }

    #[test]
    fn the_stride_table_replaces_its_least_recently_used_page() {
        let mut p = pf(PrefetchKind::Stride, 1, 1);
        for page in 0..STRIDE_ENTRIES as u64 + 1 {
            p.train(page * PAGE_BYTES, false);
        }
        assert_eq!(p.streams.len(), STRIDE_ENTRIES);
        // Page 0 was replaced: its stream starts over.
        assert!(p.train(L, false).is_empty());
        assert!(p.train(2 * L, false).is_empty());
        assert_eq!(p.train(3 * L, false), [4 * L]);
    }
}
