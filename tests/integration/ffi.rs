//! The C ABI for gem5 (`--features ffi`): the host driven by an ideal memory standing in
//! for gem5 (one flat memory, so trivially coherent, answering every request after a
//! fixed latency), bad arguments, and a C program built against the header and the static
//! library.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use moped::config::SystemConfig;
use moped::ffi::{self, Gem5Host, HostOptions, Mark, MopedG5Memory, Op, Port, Request, RunState};
use moped::mem::{LineAddr, LineData};
use moped::mpi::{run_workload, MpiParams};
use moped::os::phys::PhysMem;
use moped::workload::load_workload;

const PINGPONG: &str = "workloads/imb/pingpong-16k.toml";

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// gem5's memory for the host: lines by address, zero until written.
#[derive(Default)]
struct Lines {
    lines: HashMap<LineAddr, LineData>,
    /// Lines written through the host's functional callback.
    functional_writes: u64,
}

#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Lines>>);

impl PhysMem for Shared {
    fn read_line(&self, line: LineAddr) -> LineData {
        self.0.borrow().lines.get(&line).copied().unwrap_or([0; 64])
    }

    fn write_line(&mut self, line: LineAddr, data: &LineData) {
        let mut m = self.0.borrow_mut();
        m.functional_writes += 1;
        m.lines.insert(line, *data);
    }
}

/// What the ideal memory does besides serving requests.
#[derive(Clone, Copy, Default)]
struct Fault {
    /// Flip one byte of the `n`-th line the copy unit writes into a receive buffer.
    flip_receive_write: Option<u32>,
    /// Answer core loads after this many cycles instead of 3.
    load_latency: Option<u64>,
}

/// The outcome of a run against the ideal memory.
struct Outcome {
    state: RunState,
    cycles: u64,
    stats: moped::stats::StatsRegistry,
    summary: String,
    requests: BTreeMap<&'static str, u64>,
    /// The timed region's marks, as the host reported them.
    marks: Vec<Mark>,
    /// The most loads one core had outstanding at once.
    max_core_loads: usize,
}

impl Outcome {
    fn stat(&self, name: &str) -> u64 {
        self.stats
            .get(name)
            .unwrap_or_else(|| panic!("no statistic {name}"))
            .value
            .as_f64() as u64
    }
}

fn latency(r: &Request, fault: &Fault) -> u64 {
    match r.op {
        Op::Load => fault.load_latency.unwrap_or(3),
        Op::Store => 5,
        _ => 20,
    }
}

/// Serves `r` on the flat memory, as gem5 would once it completes: the bytes a load or an
/// M_GETS reads, or the bytes a store or an M_GETX/M_FILL writes.
fn serve(mem: &Shared, r: &Request, fault: &mut Fault, writes: &mut u32) -> Vec<u8> {
    let line = r.paddr & !63;
    let off = (r.paddr - line) as usize;
    let mut m = mem.0.borrow_mut();
    let data = m.lines.entry(line).or_insert([0; 64]);
    match r.op {
        Op::Load => data[off..off + r.size as usize].to_vec(),
        Op::MGets => data.to_vec(),
        Op::Store => {
            data[off..off + r.size as usize].copy_from_slice(&r.data[..r.size as usize]);
            Vec::new()
        }
        Op::MGetx | Op::MFill => {
            if r.op == Op::MFill && r.mask == 0 {
                // A fill grants the line without its old data.
                *data = [0; 64];
            }
            for i in (0..64).filter(|i| r.mask >> i & 1 == 1) {
                data[i] = r.data[i];
            }
            if r.mask != 0 {
                *writes += 1;
                if fault.flip_receive_write == Some(*writes) {
                    data[r.mask.trailing_zeros() as usize] ^= 0x40;
                    fault.flip_receive_write = None;
                }
            }
            Vec::new()
        }
    }
}

/// Runs the host to its end: advance to the next cycle anything is due, issue every
/// request, complete each after its latency.
fn drive(host: &mut Gem5Host<Shared>, mem: &Shared, mut fault: Fault) -> Outcome {
    let mut now = 0;
    let mut inflight: BTreeMap<(u64, u64), Request> = BTreeMap::new();
    let mut requests = BTreeMap::new();
    let mut writes = 0;
    let mut marks = Vec::new();
    let mut max_core_loads = 0;
    loop {
        let next = host.advance(now);
        marks.extend(host.take_mark());
        while let Some(r) = host.take_request() {
            let port_ok = match r.op {
                Op::Load | Op::Store => r.port == Port::Core && (1..=8).contains(&r.size),
                _ => r.port == Port::Moped && r.size == 64 && r.paddr % 64 == 0,
            };
            assert!(port_ok, "a malformed request: {r:?}");
            assert!((r.unit as usize) < host.cores());
            let name = match r.op {
                Op::Load => "load",
                Op::Store => "store",
                Op::MGets => "m_gets",
                Op::MGetx => "m_getx",
                Op::MFill => "m_fill",
            };
            *requests.entry(name).or_insert(0) += 1;
            inflight.insert((now + latency(&r, &fault), r.id), r);
            let loads = inflight
                .values()
                .filter(|x| x.op == Op::Load && x.unit == r.unit)
                .count();
            max_core_loads = max_core_loads.max(loads);
        }
        if *host.state() != RunState::Running {
            break;
        }
        let due = inflight.keys().next().map(|k| k.0);
        now = match (next, due) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => panic!("the host waits for nothing at cycle {now}"),
        };
        assert!(now < 50_000_000, "no end in sight at cycle {now}");
        while let Some((&(t, id), _)) = inflight.iter().next() {
            if t > now {
                break;
            }
            let r = inflight.remove(&(t, id)).expect("present");
            let data = serve(mem, &r, &mut fault, &mut writes);
            let level = if r.port == Port::Core { 1 } else { -1 };
            let data = (!data.is_empty()).then_some(&data[..]);
            if host.complete(r.id, data, level, now).is_err() {
                break;
            }
            marks.extend(host.take_mark());
        }
    }
    Outcome {
        state: host.state().clone(),
        cycles: host.cycles(),
        stats: host.stats(),
        summary: host.summary_json(),
        requests,
        marks,
        max_core_loads,
    }
}

fn opts(design: &str, iterations: f64) -> HostOptions {
    let mut o = HostOptions::new(repo(PINGPONG), design.parse().unwrap());
    o.iterations = iterations;
    o
}

fn run(o: &HostOptions, fault: Fault) -> (Outcome, Shared) {
    let mem = Shared::default();
    let mut host = Gem5Host::new(o, mem.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        mem.0.borrow().functional_writes > 0,
        "no initial memory image was written"
    );
    let out = drive(&mut host, &mem, fault);
    (out, mem)
}

#[test]
fn pingpong_runs_with_every_message_verified_in_each_design() {
    // Warm, with its timed region, as the embedded simulator runs it by default.
    let warm = SystemConfig::default();
    let (w, _) = load_workload(&repo(PINGPONG), Some(0.3), true).unwrap();
    for design in ["baseline", "basemoped", "optcopy", "optcache"] {
        let (out, _) = run(&opts(design, 0.3), Fault::default());
        assert_eq!(out.state, RunState::Finished, "{design}: {}", out.summary);
        // The embedded simulator checks the same messages (their number does not depend on
        // timing).
        let embedded =
            run_workload(&warm, &w, design.parse().unwrap(), 1, MpiParams::default()).unwrap();
        // The summary's counts are the whole run's, the warm-up's messages included.
        let v: serde_json::Value = serde_json::from_str(&out.summary).unwrap();
        let verified = v["messages_verified"]["value"].as_u64().unwrap();
        assert!(
            verified > out.stat("mpi.messages_verified"),
            "{design}: {verified} {} {:?}",
            out.stat("mpi.messages_verified"),
            out.marks
        );
        assert_eq!(verified, embedded.messages_verified, "{design}");
        assert_eq!(
            v["bytes_verified"]["value"].as_u64(),
            Some(embedded.bytes_verified),
            "{design}"
        );
        // The statistics are the timed region's: it starts after the warm-up and ends
        // before the last core finishes.
        // IMB's workloads have no `m5 dumpstats`: the region ends with the run.
        let [Mark::Start(from)] = out.marks[..] else {
            panic!("{design}: marks {:?}", out.marks);
        };
        let to = out.cycles;
        assert!(0 < from && from < to, "{design}: {from} {to}");
        assert_eq!(out.stat("sim.cycles"), to - from, "{design}");
        assert_eq!(out.stat("sim.timed_from"), from, "{design}");
        for c in 0..2 {
            assert!(out.stat(&format!("system.cpu{c}.accesses")) > 0, "{design}");
        }
        let moped_reqs = out.requests.get("m_gets").copied().unwrap_or(0);
        if design == "baseline" {
            assert_eq!(moped_reqs, 0);
            assert!(out.stats.get("system.moped.reserved").is_none());
        } else {
            // Each 16 kB message is read by the copy unit and completed through MOPED.
            assert!(moped_reqs >= 256, "{design}: {moped_reqs} M_GETS");
            assert!(out.stat("system.moped.completed") > 0, "{design}");
            assert_eq!(out.stat("system.moped.anomalies"), 0, "{design}");
            // The statistics count the timed region's share of what was handed out.
            let timed = out.stat("gem5.requests.m_gets");
            assert!(
                timed > 0 && timed < moped_reqs,
                "{design}: {timed} of {moped_reqs}"
            );
        }
        // OPTCACHE fills receive lines; the other designs never ask for a fill.
        let fills = out.requests.get("m_fill").copied().unwrap_or(0);
        assert_eq!(fills > 0, design == "optcache", "{design}: {fills} fills");
    }
}

#[test]
fn an_mlp_core_has_several_loads_in_gem5_at_once_and_a_blocking_core_one() {
    let (mlp, _) = run(&opts("baseline", 0.2), Fault::default());
    assert_eq!(mlp.state, RunState::Finished, "{}", mlp.summary);
    assert!(mlp.max_core_loads > 1, "{} loads", mlp.max_core_loads);
    let mut o = opts("baseline", 0.2);
    o.sets = vec![("system.core_model".into(), "blocking".into())];
    let (blocking, _) = run(&o, Fault::default());
    assert_eq!(blocking.state, RunState::Finished, "{}", blocking.summary);
    assert_eq!(blocking.max_core_loads, 1);
    assert_eq!(
        mlp.stat("mpi.bytes_verified"),
        blocking.stat("mpi.bytes_verified")
    );
}

#[test]
fn window_loads_gem5_says_will_hit_hold_no_miss_register() {
    // As the embedded L1 answers a load as it issues, a window load that will hit holds no
    // miss register: with gem5 answering "hit" for every load, a core has more loads in
    // flight than its miss registers; without an answer, no more.
    let regs = SystemConfig::default().system.outstanding_loads;
    let slow = Fault {
        load_latency: Some(40),
        ..Fault::default()
    };
    let (plain, _) = run(&opts("baseline", 0.2), slow);
    assert_eq!(plain.state, RunState::Finished, "{}", plain.summary);
    assert!(
        plain.max_core_loads <= regs,
        "{} loads",
        plain.max_core_loads
    );
    let mem = Shared::default();
    let mut host = Gem5Host::new(&opts("baseline", 0.2), mem.clone()).unwrap();
    host.set_hit_probe(Box::new(|_, _| true));
    let hits = drive(&mut host, &mem, slow);
    assert_eq!(hits.state, RunState::Finished, "{}", hits.summary);
    assert!(hits.max_core_loads > regs, "{} loads", hits.max_core_loads);
    assert!(
        hits.cycles < plain.cycles,
        "{} against {}",
        hits.cycles,
        plain.cycles
    );
    assert_eq!(
        hits.stat("mpi.bytes_verified"),
        plain.stat("mpi.bytes_verified")
    );
}

/// Every device and runtime option runs under the gem5 host as under the embedded
/// simulator: each matching engine, each scheme at two engines, and LHS's unexpected
/// queue, PingPong under OPTCOPY (the baseline for LHS, whose queue is the software
/// path's), every message verified.
#[test]
fn every_engine_scheme_and_queue_runs_with_every_message_verified() {
    let mut cases: Vec<(&str, Vec<(&str, &str)>)> = Vec::new();
    for m in ["fsm", "cam", "cam4", "cam64", "alpu", "hash", "microcoded"] {
        cases.push(("optcopy", vec![("moped.matcher", m)]));
    }
    for s in ["base", "SO", "RO", "DSR", "SR"] {
        cases.push(("optcopy", vec![("moped.engines", "2"), ("moped.scheme", s)]));
    }
    cases.push(("baseline", vec![("mpi.unexpected_queue", "lhs")]));
    for (design, sets) in cases {
        let mut o = opts(design, 0.1);
        o.sets = sets
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let (out, _) = run(&o, Fault::default());
        assert_eq!(out.state, RunState::Finished, "{sets:?}: {}", out.summary);
        let v: serde_json::Value = serde_json::from_str(&out.summary).unwrap();
        assert!(
            v["messages_verified"]["value"].as_u64() > Some(0),
            "{sets:?}"
        );
    }
}

#[test]
fn without_warm_up_the_whole_run_is_counted() {
    let mut o = opts("optcopy", 0.2);
    o.sets = vec![("workload.warmup".into(), "false".into())];
    let (out, _) = run(&o, Fault::default());
    assert_eq!(out.state, RunState::Finished, "{}", out.summary);
    assert!(out.marks.is_empty(), "{:?}", out.marks);
    assert_eq!(out.stat("sim.cycles"), out.cycles);
    assert_eq!(out.stat("sim.timed_from"), 0);
}

#[test]
fn the_l1_prefetcher_is_refused_naming_the_key() {
    let mut o = opts("baseline", 0.1);
    o.sets = vec![("l1.prefetch".into(), "next_line".into())];
    let e = Gem5Host::new(&o, Shared::default()).err().expect("refused");
    assert!(e.contains("l1.prefetch"), "{e}");
    assert!(e.contains("embedded simulator"), "{e}");
}

#[test]
fn runs_are_deterministic_and_the_summary_has_descriptions_and_units() {
    let (a, _) = run(&opts("optcopy", 0.2), Fault::default());
    let (b, _) = run(&opts("optcopy", 0.2), Fault::default());
    assert_eq!(a.summary, b.summary);
    let v: serde_json::Value = serde_json::from_str(&a.summary).unwrap();
    assert_eq!(v["state"], "finished");
    assert_eq!(v["design"], "optcopy");
    // The headline numbers at the top, as gem5's MopedSystem writes them into moped.json:
    // the timed region's.
    assert_eq!(v["cycles"]["value"], a.stat("sim.cycles"));
    assert!(v["messages_verified"]["value"].as_u64() > Some(a.stat("mpi.messages_verified")));
    assert_eq!(v["bytes_verified"]["unit"], "Byte");
    let stats = v["stats"].as_array().unwrap();
    for name in [
        "sim.cycles",
        "system.cpu0.accesses",
        "mpi.messages_verified",
        "mpi.bytes_verified",
        "system.moped.line_reads",
        "system.moped0.completed",
        "system.moped.messages",
        "system.os.demand_maps",
    ] {
        let s = stats
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing"));
        assert!(!s["desc"].as_str().unwrap().is_empty(), "{name}");
        assert!(!s["unit"].as_str().unwrap().is_empty(), "{name}");
    }
    // Another seed makes other buffers, so other bytes are checked.
    let mut o = opts("optcopy", 0.2);
    o.seed = 2;
    let (c, _) = run(&o, Fault::default());
    assert_eq!(c.state, RunState::Finished);
}

#[test]
fn a_flipped_receive_byte_fails_the_run_naming_ranks_tag_and_offset() {
    let (out, _) = run(
        &opts("optcopy", 0.2),
        Fault {
            flip_receive_write: Some(5),
            ..Fault::default()
        },
    );
    let RunState::Failed(e) = &out.state else {
        panic!("the corruption went unnoticed: {:?}", out.state);
    };
    println!("{e}");
    // IMB's receives take any source and tag: the report names the send nearest to the
    // buffer's bytes and where they first differ.
    assert!(e.contains("rank 1 completed a receive"), "{e}");
    assert!(e.contains("message from rank 0 to rank 1 (tag"), "{e}");
    assert!(e.contains("differs first at offset"), "{e}");
    assert!(e.contains("the sender sent"), "{e}");
    let v: serde_json::Value = serde_json::from_str(&out.summary).unwrap();
    assert_eq!(v["state"], "failed");
    assert_eq!(v["error"].as_str(), Some(e.as_str()));
}

#[test]
fn a_host_that_never_hears_back_trips_the_watchdog() {
    let mut o = opts("baseline", 0.1);
    o.sets = vec![("watchdog.progress_cycles".into(), "2000".into())];
    let mem = Shared::default();
    let mut host = Gem5Host::new(&o, mem).unwrap();
    let mut now = 0;
    // Requests are taken but never completed.
    while let Some(t) = host.advance(now) {
        while host.take_request().is_some() {}
        now = t;
    }
    let e = host.error().expect("failed").to_string();
    assert!(e.contains("made no progress"), "{e}");
    assert!(e.contains("MPI ranks"), "{e}");
    assert!(host.complete(1, None, 0, now).is_err());
}

#[test]
fn a_completion_nobody_waits_for_fails_the_run() {
    let mem = Shared::default();
    let mut host = Gem5Host::new(&opts("baseline", 0.1), mem).unwrap();
    host.advance(0);
    let e = host.complete(999_999, None, 0, 1).unwrap_err();
    assert!(e.contains("request 999999"), "{e}");
    assert_eq!(host.advance(2), None);
}

// ---- The C entry points ----

unsafe extern "C" fn c_read(ctx: *mut c_void, paddr: u64, out: *mut u8) {
    let m = &*(ctx as *const Shared);
    let l = m.read_line(paddr);
    std::ptr::copy_nonoverlapping(l.as_ptr(), out, 64);
}

unsafe extern "C" fn c_write(ctx: *mut c_void, paddr: u64, data: *const u8) {
    let m = &mut *(ctx as *mut Shared);
    let mut l = [0; 64];
    std::ptr::copy_nonoverlapping(data, l.as_mut_ptr(), 64);
    m.write_line(paddr, &l);
}

/// Arguments of `moped_g5_host_new`; `None` passes a null pointer.
#[derive(Clone, Copy)]
struct NewArgs<'a> {
    workload: Option<&'a str>,
    design: &'a str,
    iterations: f64,
    config: Option<&'a str>,
    sets: Option<&'a str>,
    callbacks: bool,
    err_len: usize,
}

fn args(design: &str) -> NewArgs<'_> {
    NewArgs {
        workload: Some(PINGPONG),
        design,
        iterations: 1.0,
        config: None,
        sets: None,
        callbacks: true,
        err_len: 512,
    }
}

/// `moped_g5_host_new` with these arguments: the host or the error message.
fn c_new(a: NewArgs, mem: &mut Shared) -> Result<*mut ffi::MopedG5Host, String> {
    let c = |s: Option<&str>| s.map(|s| CString::new(s).unwrap());
    let ptr = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    let workload = c(a.workload.map(|w| repo(w).display().to_string()).as_deref());
    let (design, config, sets) = (c(Some(a.design)), c(a.config), c(a.sets));
    let m = MopedG5Memory {
        ctx: mem as *mut Shared as *mut c_void,
        read_line: a.callbacks.then_some(c_read as ffi::ReadLineFn),
        write_line: a.callbacks.then_some(c_write as ffi::WriteLineFn),
    };
    let mut err = vec![1 as c_char; a.err_len];
    let h = unsafe {
        ffi::moped_g5_host_new(
            ptr(&workload),
            ptr(&design),
            a.iterations,
            1,
            ptr(&config),
            ptr(&sets),
            m,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    if !h.is_null() {
        return Ok(h);
    }
    if a.err_len == 0 {
        return Err(String::new());
    }
    let e = unsafe { CStr::from_ptr(err.as_ptr()) };
    Err(e.to_str().unwrap().to_string())
}

#[test]
fn bad_arguments_return_null_with_a_message() {
    let mut mem = Shared::default();
    let mut fail = |a: NewArgs, want: &str| {
        let e = c_new(a, &mut mem).expect_err("refused");
        assert!(e.contains(want), "{want}: {e}");
    };
    let missing = NewArgs {
        workload: Some("no/such/workload.toml"),
        ..args("optcopy")
    };
    fail(missing, "no/such/workload.toml");
    fail(args("optimal"), "unknown design `optimal`");
    let sets = |s| NewArgs {
        sets: Some(s),
        ..args("optcopy")
    };
    fail(sets("l2.latency=12;l2.bogus=3"), "l2.bogus");
    fail(sets("l2.latency"), "not KEY=VALUE");
    fail(sets("system.cores=0"), "system.cores");
    for it in [0.0, 1.5, f64::NAN] {
        let a = NewArgs {
            iterations: it,
            ..args("optcopy")
        };
        fail(a, "iterations");
    }
    // A config file with a mistake is named with its line.
    let dir = std::env::temp_dir().join(format!("moped-ffi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("bad.toml");
    std::fs::write(&cfg, "[l2]\nlatency = \"slow\"\n").unwrap();
    let cfg = cfg.display().to_string();
    let bad_cfg = NewArgs {
        config: Some(&cfg),
        ..args("optcopy")
    };
    fail(bad_cfg, "bad.toml:2");
    // Truncated to the buffer, NUL-terminated; no buffer at all is fine too.
    let short = c_new(
        NewArgs {
            err_len: 8,
            ..bad_cfg
        },
        &mut mem,
    )
    .unwrap_err();
    assert_eq!(short.len(), 7);
    assert!(c_new(
        NewArgs {
            err_len: 0,
            ..bad_cfg
        },
        &mut mem
    )
    .is_err());
    std::fs::remove_dir_all(&dir).ok();
    let no_callbacks = NewArgs {
        callbacks: false,
        ..args("optcopy")
    };
    c_new(no_callbacks, &mut mem).expect_err("no memory");
    let no_workload = NewArgs {
        workload: None,
        ..args("optcopy")
    };
    c_new(no_workload, &mut mem).expect_err("no workload");
}

#[test]
fn the_request_has_the_headers_layout() {
    use std::mem::{offset_of, size_of};
    // tests/ffi_c/smoke.c asserts the same numbers of the C struct.
    assert_eq!(offset_of!(ffi::MopedG5Request, paddr), 24);
    assert_eq!(offset_of!(ffi::MopedG5Request, mask), 32);
    assert_eq!(offset_of!(ffi::MopedG5Request, data), 40);
    assert_eq!(size_of::<ffi::MopedG5Request>(), 104);
}

#[test]
fn every_entry_point_takes_a_null_host() {
    let null = std::ptr::null_mut::<ffi::MopedG5Host>();
    let mut buf = [1 as c_char; 16];
    let mut req = std::mem::MaybeUninit::<ffi::MopedG5Request>::zeroed();
    unsafe {
        assert_eq!(ffi::moped_g5_cores(null), 0);
        assert_eq!(ffi::moped_g5_has_moped(null), 0);
        assert_eq!(ffi::moped_g5_memory_bytes(null), 0);
        assert_eq!(ffi::moped_g5_advance(null, 10), u64::MAX);
        assert_eq!(
            ffi::moped_g5_set_hit_probe(null, std::ptr::null_mut(), None),
            -1
        );
        assert_eq!(ffi::moped_g5_take_request(null, req.as_mut_ptr()), 0);
        let mut at = 7;
        assert_eq!(ffi::moped_g5_take_mark(null, &mut at), 0);
        assert_eq!(at, 7);
        assert_eq!(ffi::moped_g5_complete(null, 1, std::ptr::null(), 0, 1), -1);
        assert_eq!(ffi::moped_g5_finished(null), 0);
        assert_eq!(ffi::moped_g5_error(null, buf.as_mut_ptr(), buf.len()), 0);
        assert_eq!(buf[0], 0);
        assert_eq!(
            ffi::moped_g5_summary_json(null, buf.as_mut_ptr(), buf.len()),
            2
        );
        ffi::moped_g5_host_free(null);
        let net = std::ptr::null_mut::<ffi::MopedG5Net>();
        assert_eq!(ffi::moped_g5_host_net_send(null, 0, 1, 8, 0, 5), u64::MAX);
        assert_eq!(ffi::moped_g5_net_matches(null, net), 0);
        assert_eq!(
            ffi::moped_g5_net_send(net, 0, 1, 8, 0, 5, buf.as_mut_ptr(), buf.len()),
            u64::MAX
        );
        assert!(ffi::moped_g5_net_new(std::ptr::null(), buf.as_mut_ptr(), buf.len()).is_null());
        ffi::moped_g5_net_free(net);
    }
}

/// The default system's network parameters (Table 1).
fn table1_net() -> ffi::MopedG5NetConfig {
    ffi::MopedG5NetConfig {
        cores: 16,
        dirs: 4,
        cores_per_leaf: 4,
        hop_latency: 1,
        link_bytes_per_cycle: 16,
        header_bytes: 8,
        core_ghz: 1.0,
        net_mhz: 500.0,
    }
}

#[test]
fn rubys_messages_take_the_embedded_networks_time_and_share_the_hosts_links() {
    let mut err = [0 as c_char; 256];
    let text = |e: &[c_char]| {
        unsafe { CStr::from_ptr(e.as_ptr()) }
            .to_str()
            .unwrap()
            .to_string()
    };
    unsafe {
        let net = ffi::moped_g5_net_new(&table1_net(), err.as_mut_ptr(), err.len());
        assert!(!net.is_null(), "{}", text(&err));
        // A data message from core 0 to core 15: four links of 10 cycles' serialization
        // (72 bytes at 16 per 2-cycle network cycle) and a 2-cycle hop each.
        let send = |net, src, dst, bytes, now, err: &mut [c_char]| {
            ffi::moped_g5_net_send(net, src, dst, bytes, 2, now, err.as_mut_ptr(), err.len())
        };
        assert_eq!(send(net, 0, 15, 72, 100, &mut err), 148);
        // The next one waits for the first to leave core 0's link.
        assert_eq!(send(net, 0, 15, 72, 100, &mut err), 158);
        assert_eq!(send(net, 0, 20, 72, 100, &mut err), u64::MAX);
        assert!(text(&err).contains("node 20"), "{}", text(&err));

        let mut mem = Shared::default();
        let h = c_new(args("optcopy"), &mut mem).unwrap();
        assert_eq!(ffi::moped_g5_net_matches(h, net), 1);
        let mut other = table1_net();
        other.hop_latency = 2;
        let slow = ffi::moped_g5_net_new(&other, err.as_mut_ptr(), err.len());
        assert_eq!(ffi::moped_g5_net_matches(h, slow), 0);
        other.link_bytes_per_cycle = 0;
        assert!(ffi::moped_g5_net_new(&other, err.as_mut_ptr(), err.len()).is_null());
        assert!(
            text(&err).contains("network.link_bytes_per_cycle"),
            "{}",
            text(&err)
        );
        // On the host's links the same two messages take the same times.
        assert_eq!(ffi::moped_g5_host_net_send(h, 0, 15, 72, 2, 100), 148);
        assert_eq!(ffi::moped_g5_host_net_send(h, 0, 15, 72, 2, 100), 158);
        // A message the network cannot carry fails the run, saying why.
        assert_eq!(ffi::moped_g5_host_net_send(h, 0, 1, 8, 3, 100), u64::MAX);
        assert_eq!(ffi::moped_g5_finished(h), -1);
        ffi::moped_g5_error(h, err.as_mut_ptr(), err.len());
        assert!(text(&err).contains("virtual network 3"), "{}", text(&err));
        ffi::moped_g5_host_free(h);
        ffi::moped_g5_net_free(net);
        ffi::moped_g5_net_free(slow);
    }
}

#[test]
fn the_c_entry_points_run_a_workload_to_its_end() {
    let mut mem = Shared::default();
    let a = NewArgs {
        iterations: 0.1,
        sets: Some("l2.latency=12"),
        ..args("optcache")
    };
    let h = c_new(a, &mut mem).unwrap();
    unsafe {
        assert_eq!(ffi::moped_g5_cores(h), 16);
        assert_eq!(ffi::moped_g5_has_moped(h), 1);
        assert_eq!(ffi::moped_g5_memory_bytes(h), 512 << 20);
        let mut now = 0;
        let mut inflight: BTreeMap<(u64, u64), Request> = BTreeMap::new();
        let mut fault = Fault::default();
        let mut writes = 0;
        let mut marks = Vec::new();
        loop {
            let next = ffi::moped_g5_advance(h, now);
            let mut at = 0;
            match ffi::moped_g5_take_mark(h, &mut at) {
                0 => {}
                kind => marks.push((kind, at)),
            }
            assert_eq!(ffi::moped_g5_take_mark(h, std::ptr::null_mut()), 0);
            let mut r = std::mem::MaybeUninit::<ffi::MopedG5Request>::zeroed();
            while ffi::moped_g5_take_request(h, r.as_mut_ptr()) == 1 {
                let c = r.assume_init();
                let op = [Op::Load, Op::Store, Op::MGets, Op::MGetx, Op::MFill][c.op as usize];
                let port = [Port::Core, Port::Moped][c.port as usize];
                let req = Request {
                    id: c.id,
                    port,
                    unit: c.unit,
                    op,
                    size: c.size,
                    paddr: c.paddr,
                    mask: c.mask,
                    data: c.data,
                };
                inflight.insert((now + latency(&req, &Fault::default()), req.id), req);
            }
            if ffi::moped_g5_finished(h) != 0 {
                break;
            }
            let due = inflight.keys().next().map_or(u64::MAX, |k| k.0);
            now = next.min(due);
            assert_ne!(now, u64::MAX, "stuck");
            while let Some((&(t, id), _)) = inflight.iter().next() {
                if t > now {
                    break;
                }
                let r = inflight.remove(&(t, id)).unwrap();
                let data = serve(&mem, &r, &mut fault, &mut writes);
                let p = if data.is_empty() {
                    std::ptr::null()
                } else {
                    data.as_ptr()
                };
                assert_eq!(ffi::moped_g5_complete(h, r.id, p, 0, now), 0);
            }
        }
        let mut buf = vec![0 as c_char; 64];
        assert_eq!(ffi::moped_g5_error(h, buf.as_mut_ptr(), buf.len()), 0);
        assert_eq!(ffi::moped_g5_finished(h), 1);
        let n = ffi::moped_g5_summary_json(h, std::ptr::null_mut(), 0);
        let mut buf = vec![0 as c_char; n + 1];
        assert_eq!(
            ffi::moped_g5_summary_json(h, buf.as_mut_ptr(), buf.len()),
            n
        );
        let text = CStr::from_ptr(buf.as_ptr()).to_str().unwrap();
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(v["state"], "finished");
        // One mark, where the warm-up ends; the region then ends with the run.
        let [(1, from)] = marks[..] else {
            panic!("marks {marks:?}");
        };
        assert_eq!(v["timed_region"]["from"], from);
        assert_eq!(v["timed_region"]["end_dumped"], false);
        assert!(v["timed_region"]["to"].as_u64() > Some(from));
        ffi::moped_g5_host_free(h);
    }
}

// ---- A C program against the header and the static library ----

/// Builds the static library as gem5 links it (the dev profile, into a folder of its own
/// under this test's scratch folder, so later runs rebuild only what changed) and returns
/// it with the native libraries it needs.
fn build_staticlib() -> Result<(PathBuf, Vec<String>), String> {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ffi-staticlib");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "rustc",
            "--features",
            "ffi",
            "--lib",
            "--crate-type",
            "staticlib",
            "--target-dir",
        ])
        .arg(&target)
        .args(["--", "--print", "native-static-libs"])
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    let log = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() {
        return Err(format!("cargo rustc failed:\n{log}"));
    }
    let libs = log
        .lines()
        .find_map(|l| l.split_once("native-static-libs:").map(|x| x.1.to_string()))
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    Ok((target.join("debug").join("libmoped.a"), libs))
}

#[test]
fn a_c_program_links_the_static_library_against_the_header() {
    if Command::new("cc").arg("--version").output().is_err() {
        println!("skipped: no `cc` on this machine to compile tests/ffi_c/smoke.c");
        return;
    }
    let (lib, libs) = build_staticlib().unwrap_or_else(|e| panic!("{e}"));
    let nm = Command::new("nm")
        .arg("-g")
        .arg("--defined-only")
        .arg(&lib)
        .output();
    if let Ok(nm) = nm {
        let syms = String::from_utf8_lossy(&nm.stdout);
        let header =
            std::fs::read_to_string(repo("gem5-configs/moped_ext/rust/moped_gem5.h")).unwrap();
        for f in header
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("moped_g5_"))
        {
            assert!(
                syms.lines()
                    .any(|l| l.ends_with(&format!(" T {f}")) || l.ends_with(&format!(" T _{f}"))),
                "{f} is not exported by {}",
                lib.display()
            );
        }
    }
    let exe = lib.with_file_name("moped_ffi_smoke");
    let cc = Command::new("cc")
        .arg("-std=c11")
        .arg("-Wall")
        .arg("-Wextra")
        .arg("-Werror")
        .arg("-I")
        .arg(repo("gem5-configs/moped_ext/rust"))
        .arg(repo("tests/ffi_c/smoke.c"))
        .arg(&lib)
        .args(&libs)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = Command::new(&exe).arg(repo(PINGPONG)).output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "smoke.c failed:\n{said}");
    assert!(said.contains("finished"), "{said}");
}

#[test]
fn a_panic_behind_an_entry_point_fails_the_run_instead_of_unwinding_into_c() {
    let mut mem = Shared::default();
    let h = c_new(args("optcopy"), &mut mem).unwrap();
    let mut buf = [1 as c_char; 256];
    unsafe {
        assert_eq!(ffi::moped_g5_panic_for_test(h), -1);
        assert_eq!(ffi::moped_g5_finished(h), -1);
        ffi::moped_g5_error(h, buf.as_mut_ptr(), buf.len());
        let e = CStr::from_ptr(buf.as_ptr()).to_str().unwrap().to_string();
        assert!(
            e.contains("internal error, please report")
                && e.contains("a deliberate panic to test the C boundary"),
            "{e}"
        );
        ffi::moped_g5_host_free(h);
    }
}

/// The LHS paper's NICs, flushes and software prefetch run on the embedded simulator only:
/// the gem5 host refuses them up front, saying where they run.
#[test]
fn the_gem5_host_refuses_the_nic_setting() {
    for set in ["nic.enabled", "mpi.search_prefetch"] {
        let mut o = opts("baseline", 0.3);
        o.sets = vec![(set.to_string(), "true".to_string())];
        let e = Gem5Host::new(&o, Shared::default()).err().expect(set);
        assert!(e.contains("embedded simulator only"), "{set}: {e}");
    }
}
