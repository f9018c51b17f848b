//! The C ABI for gem5 (`gem5-configs/moped_ext/rust/moped_gem5.h`), behind the `ffi`
//! feature: a [`Gem5Host`] behind an opaque pointer. gem5's `MopedSystem` SimObject links
//! the static library that `cargo rustc --release --features ffi --lib --crate-type
//! staticlib` builds, issues the requests [`moped_g5_take_request`] hands out on its Ruby
//! sequencers, reports their completion with [`moped_g5_complete`] and wakes the host at the
//! cycles [`moped_g5_advance`] asks for. It owns the coherent memory and lends it through
//! the [`MopedG5Memory`] callbacks.
//!
//! Every entry point accepts a null host, and catches panics: a panic fails the run (or
//! makes `moped_g5_host_new` return null) with its message instead of unwinding into C.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use crate::mem::{LineAddr, LineData, LINE_BYTES};
use crate::os::phys::PhysMem;

pub use crate::api::gem5::{Gem5Host, HostOptions, Mark, RunState};
pub use crate::api::gem5::{Op, Port, Request};
pub use crate::api::gem5::{RubyMsg, RubyNet};

/// Bytes of a line (`MOPED_G5_LINE_BYTES`).
pub const MOPED_G5_LINE_BYTES: usize = LINE_BYTES;

/// Reads line `paddr` into `out` (64 bytes).
pub type ReadLineFn = unsafe extern "C" fn(ctx: *mut c_void, paddr: u64, out: *mut u8);
/// Writes the 64 bytes at `data` into line `paddr`.
pub type WriteLineFn = unsafe extern "C" fn(ctx: *mut c_void, paddr: u64, data: *const u8);
/// Whether core `core`'s load of `paddr`, entering Ruby now, will hit its L1 or L2: nonzero
/// if so.
pub type HitsFn = unsafe extern "C" fn(ctx: *mut c_void, core: u32, paddr: u64) -> c_int;

/// Functional access to the host's memory (`MopedG5Memory`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MopedG5Memory {
    pub ctx: *mut c_void,
    pub read_line: Option<ReadLineFn>,
    pub write_line: Option<WriteLineFn>,
}

/// A request for gem5 (`MopedG5Request`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MopedG5Request {
    pub id: u64,
    pub port: u32,
    pub unit: u32,
    pub op: u32,
    pub size: u32,
    pub paddr: u64,
    pub mask: u64,
    pub data: [u8; MOPED_G5_LINE_BYTES],
}

impl From<Request> for MopedG5Request {
    fn from(r: Request) -> MopedG5Request {
        MopedG5Request {
            id: r.id,
            port: r.port as u32,
            unit: r.unit,
            op: r.op as u32,
            size: r.size,
            paddr: r.paddr,
            mask: r.mask,
            data: r.data,
        }
    }
}

/// gem5's memory through its callbacks.
pub struct CallbackMem {
    ctx: *mut c_void,
    read: ReadLineFn,
    write: WriteLineFn,
}

impl PhysMem for CallbackMem {
    fn read_line(&self, line: LineAddr) -> LineData {
        let mut out = [0; LINE_BYTES];
        // SAFETY: the host promised, in `moped_g5_host_new`, a callback that fills 64 bytes
        // at `out` and a context valid until `moped_g5_host_free`.
        unsafe { (self.read)(self.ctx, line, out.as_mut_ptr()) };
        out
    }

    fn write_line(&mut self, line: LineAddr, data: &LineData) {
        // SAFETY: as for `read_line`; the callback only reads the 64 bytes at `data`.
        unsafe { (self.write)(self.ctx, line, data.as_ptr()) };
    }
}

/// The opaque host (`MopedG5Host`).
pub struct MopedG5Host {
    host: Gem5Host<CallbackMem>,
}

/// A panic's message, as an internal error.
fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    crate::api::internal_error(&*p)
}

/// Runs `f` on the host, failing the run if it panics; `dflt` without a host.
fn with_host<R>(
    host: *mut MopedG5Host,
    dflt: R,
    fail: R,
    f: impl FnOnce(&mut Gem5Host<CallbackMem>) -> R,
) -> R {
    // SAFETY: a non-null pointer came from `moped_g5_host_new` and is not freed yet (the
    // header's contract); the host is not shared between threads.
    let Some(h) = (unsafe { host.as_mut() }) else {
        return dflt;
    };
    match catch_unwind(AssertUnwindSafe(|| f(&mut h.host))) {
        Ok(r) => r,
        Err(p) => {
            h.host.fail_with(panic_text(p));
            fail
        }
    }
}

/// Read-only twin of [`with_host`].
fn read_host<R>(
    host: *const MopedG5Host,
    dflt: R,
    f: impl FnOnce(&Gem5Host<CallbackMem>) -> R,
) -> R {
    // SAFETY: as in `with_host`.
    let Some(h) = (unsafe { host.as_ref() }) else {
        return dflt;
    };
    catch_unwind(AssertUnwindSafe(|| f(&h.host))).unwrap_or(dflt)
}

/// Copies `text` into the C buffer `out` of `len` bytes, truncated at a character
/// boundary and NUL-terminated; returns the full length of `text`.
fn write_c(text: &str, out: *mut c_char, len: usize) -> usize {
    if !out.is_null() && len > 0 {
        let mut n = text.len().min(len - 1);
        while !text.is_char_boundary(n) {
            n -= 1;
        }
        // SAFETY: the caller gives `len` writable bytes at `out`; `n + 1 <= len`.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), out.cast::<u8>(), n);
            *out.add(n) = 0;
        }
    }
    text.len()
}

/// A C string argument: `None` for null, an error naming `what` if not UTF-8.
///
/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>, String> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's promise.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map(Some)
        .map_err(|_| format!("{what}: not UTF-8"))
}

/// Creates the system for a workload under a design (see the header); null on error, with
/// the message in `err`.
///
/// # Safety
/// String arguments are null or NUL-terminated; `err` is null or has `err_len` writable
/// bytes; `mem`'s callbacks and context stay valid until [`moped_g5_host_free`].
#[no_mangle]
pub unsafe extern "C" fn moped_g5_host_new(
    workload: *const c_char,
    design: *const c_char,
    iterations: f64,
    seed: u64,
    config_toml: *const c_char,
    sets: *const c_char,
    mem: MopedG5Memory,
    err: *mut c_char,
    err_len: usize,
) -> *mut MopedG5Host {
    let made = catch_unwind(AssertUnwindSafe(|| -> Result<MopedG5Host, String> {
        // SAFETY: the caller's promise on the string arguments.
        let (workload, design, config, sets) = unsafe {
            (
                c_str(workload, "workload")?,
                c_str(design, "design")?,
                c_str(config_toml, "config_toml")?,
                c_str(sets, "sets")?,
            )
        };
        let workload = workload.ok_or("workload: a null pointer")?;
        let design = design.ok_or("design: a null pointer")?;
        let (Some(read), Some(write)) = (mem.read_line, mem.write_line) else {
            return Err("mem: read_line and write_line must not be null".into());
        };
        let opts = HostOptions {
            workload: PathBuf::from(workload),
            design: design
                .parse()
                .map_err(|e: crate::api::UnknownDesign| e.to_string())?,
            iterations,
            seed,
            config: config.map(PathBuf::from),
            sets: HostOptions::parse_sets(sets.unwrap_or(""))?,
        };
        let mem = CallbackMem {
            ctx: mem.ctx,
            read,
            write,
        };
        Ok(MopedG5Host {
            host: Gem5Host::new(&opts, mem)?,
        })
    }));
    boxed_or_null(made, err, err_len)
}

/// Frees a host (null is ignored).
///
/// # Safety
/// `host` is null or came from [`moped_g5_host_new`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_host_free(host: *mut MopedG5Host) {
    if !host.is_null() {
        // SAFETY: the caller's promise; dropping runs no callbacks, so it cannot unwind
        // out of C through them.
        let b = unsafe { Box::from_raw(host) };
        let _ = catch_unwind(AssertUnwindSafe(move || drop(b)));
    }
}

/// The number of cores (= L2s = MOPEDs); 0 without a host.
///
/// # Safety
/// `host` is null or a live host.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_cores(host: *const MopedG5Host) -> u32 {
    read_host(host, 0, |h| h.cores() as u32)
}

/// 1 if the design has MOPEDs, else 0.
///
/// # Safety
/// `host` is null or a live host.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_has_moped(host: *const MopedG5Host) -> c_int {
    read_host(host, 0, |h| c_int::from(h.has_moped()))
}

/// Bytes of physical memory the OS hands page frames from; 0 without a host.
///
/// # Safety
/// `host` is null or a live host.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_memory_bytes(host: *const MopedG5Host) -> u64 {
    read_host(host, 0, |h| h.memory_bytes())
}

/// Lets gem5 answer, as a core's window load enters Ruby, whether it will hit its L1 or
/// L2 (`hits(ctx, core, paddr)`), so that such a load holds no miss register, as in the
/// embedded model; a null `hits` leaves every window load counted as a miss. 0, or -1
/// without a host.
///
/// # Safety
/// `host` is null or a live host; `hits`, if not null, may be called with `ctx` for as
/// long as the host lives.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_set_hit_probe(
    host: *mut MopedG5Host,
    ctx: *mut c_void,
    hits: Option<HitsFn>,
) -> c_int {
    with_host(host, -1, -1, |h| {
        if let Some(f) = hits {
            // SAFETY: the caller's promise that `f` may be called with `ctx` while the
            // host lives.
            h.set_hit_probe(Box::new(move |c, paddr| unsafe {
                f(ctx, c as u32, paddr) != 0
            }));
        }
        0
    })
}

/// Runs everything due up to cycle `now`; the next cycle the host needs a call at, or
/// `u64::MAX`.
///
/// # Safety
/// `host` is null or a live host.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_advance(host: *mut MopedG5Host, now: u64) -> u64 {
    with_host(host, u64::MAX, u64::MAX, |h| {
        h.advance(now).unwrap_or(u64::MAX)
    })
}

/// The timed region's mark the run last reached, if not yet taken: 1 where the region
/// starts, 2 where it ends (its cycle into `cycle`), 0 for none.
///
/// # Safety
/// `host` is null or a live host; `cycle` is null or points to a writable `u64`.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_take_mark(host: *mut MopedG5Host, cycle: *mut u64) -> c_int {
    let (kind, at) = with_host(host, (0, 0), (0, 0), |h| match h.take_mark() {
        Some(Mark::Start(t)) => (1, t),
        Some(Mark::End(t)) => (2, t),
        None => (0, 0),
    });
    if kind != 0 && !cycle.is_null() {
        // SAFETY: checked non-null; the caller's promise that it is writable.
        unsafe { cycle.write(at) };
    }
    kind
}

/// Pops the next request into `out`: 1 if there was one, else 0.
///
/// # Safety
/// `host` is null or a live host; `out` is null or points to a writable request.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_take_request(
    host: *mut MopedG5Host,
    out: *mut MopedG5Request,
) -> c_int {
    if out.is_null() {
        return 0;
    }
    with_host(host, 0, 0, |h| match h.take_request() {
        Some(r) => {
            // SAFETY: checked non-null; the caller's promise that it is writable.
            unsafe { out.write(r.into()) };
            1
        }
        None => 0,
    })
}

/// Request `id` finished at cycle `now`: 0, or -1 if the run failed.
///
/// # Safety
/// `host` is null or a live host; `data` is null or holds the request's answer (its size
/// for a LOAD, 64 bytes for an M_GETS).
#[no_mangle]
pub unsafe extern "C" fn moped_g5_complete(
    host: *mut MopedG5Host,
    id: u64,
    data: *const u8,
    level: i32,
    now: u64,
) -> c_int {
    with_host(host, -1, -1, |h| {
        let n = h.completion_bytes(id);
        let data = (!data.is_null()).then(|| {
            // SAFETY: non-null, and the caller's promise covers the `n` bytes the request
            // answers with.
            unsafe { std::slice::from_raw_parts(data, n) }
        });
        match h.complete(id, data, level, now) {
            Ok(()) => 0,
            Err(_) => -1,
        }
    })
}

/// Panics inside [`with_host`], for the test that proves the entry points catch panics;
/// not exported to C. Returns -1 when the panic was caught and failed the run.
///
/// # Safety
/// `host` is null or a live host.
#[doc(hidden)]
pub unsafe extern "C" fn moped_g5_panic_for_test(host: *mut MopedG5Host) -> c_int {
    with_host(host, 0, -1, |_| {
        panic!("a deliberate panic to test the C boundary")
    })
}

/// 1 when every core finished and every check passed, -1 when the run failed, else 0
/// (also without a host).
///
/// # Safety
/// `host` is null or a live host.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_finished(host: *const MopedG5Host) -> c_int {
    read_host(host, 0, |h| match h.state() {
        RunState::Running => 0,
        RunState::Finished => 1,
        RunState::Failed(_) => -1,
    })
}

/// The failure message (or "") into `out`; returns its full length.
///
/// # Safety
/// `host` is null or a live host; `out` is null or has `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_error(
    host: *const MopedG5Host,
    out: *mut c_char,
    len: usize,
) -> usize {
    let text = read_host(host, String::new(), |h| {
        h.error().unwrap_or_default().to_string()
    });
    write_c(&text, out, len)
}

/// The run's summary as JSON into `out`; returns its full length.
///
/// # Safety
/// `host` is null or a live host; `out` is null or has `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_summary_json(
    host: *const MopedG5Host,
    out: *mut c_char,
    len: usize,
) -> usize {
    let text = read_host(host, "{}".to_string(), |h| h.summary_json());
    write_c(&text, out, len)
}

/// A Ruby message from the C arguments.
fn ruby_msg(src: u32, dst: u32, bytes: u32, vnet: u32, now: u64) -> RubyMsg {
    RubyMsg {
        src: src as usize,
        dst: dst as usize,
        bytes,
        vnet: vnet as usize,
        now,
    }
}

/// A new object's pointer, or null with the error or panic message in `err`.
fn boxed_or_null<T>(
    made: std::thread::Result<Result<T, String>>,
    err: *mut c_char,
    err_len: usize,
) -> *mut T {
    match made {
        Ok(Ok(t)) => Box::into_raw(Box::new(t)),
        Ok(Err(e)) => {
            write_c(&e, err, err_len);
            std::ptr::null_mut()
        }
        Err(p) => {
            write_c(&panic_text(p), err, err_len);
            std::ptr::null_mut()
        }
    }
}

/// The links of a network without a workload (`MopedG5Net`): gem5's RubyTester runs.
pub struct MopedG5Net {
    net: RubyNet,
}

/// The parameters of a network (`MopedG5NetConfig`), as moped's system config names them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MopedG5NetConfig {
    pub cores: u32,
    pub dirs: u32,
    pub cores_per_leaf: u32,
    pub hop_latency: u32,
    pub link_bytes_per_cycle: u32,
    pub header_bytes: u32,
    pub core_ghz: f64,
    pub net_mhz: f64,
}

impl MopedG5NetConfig {
    /// The default system with these network parameters.
    fn system(&self) -> crate::config::SystemConfig {
        let mut cfg = crate::config::SystemConfig::default();
        cfg.system.cores = self.cores as usize;
        cfg.system.core_ghz = self.core_ghz;
        cfg.directory.banks = self.dirs as usize;
        cfg.network.cores_per_leaf = self.cores_per_leaf as usize;
        cfg.network.hop_latency = self.hop_latency;
        cfg.network.link_bytes_per_cycle = self.link_bytes_per_cycle;
        cfg.network.header_bytes = self.header_bytes;
        cfg.network.net_mhz = self.net_mhz;
        cfg
    }
}

/// Creates the links `cfg` describes; null on error, with the message (naming the config
/// key) in `err`.
///
/// # Safety
/// `cfg` is null or points to a config; `err` is null or has `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_net_new(
    cfg: *const MopedG5NetConfig,
    err: *mut c_char,
    err_len: usize,
) -> *mut MopedG5Net {
    // SAFETY: the caller's promise.
    let Some(cfg) = (unsafe { cfg.as_ref() }) else {
        write_c("cfg: a null pointer", err, err_len);
        return std::ptr::null_mut();
    };
    let made = catch_unwind(AssertUnwindSafe(|| {
        RubyNet::new(&cfg.system()).map(|net| MopedG5Net { net })
    }));
    boxed_or_null(made, err, err_len)
}

/// Frees a network (null is ignored).
///
/// # Safety
/// `net` is null or came from [`moped_g5_net_new`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_net_free(net: *mut MopedG5Net) {
    if !net.is_null() {
        // SAFETY: the caller's promise.
        drop(unsafe { Box::from_raw(net) });
    }
}

/// A Ruby message on `net`: the cycle it arrives, or `u64::MAX` for a node, virtual
/// network or size the network does not have (the message into `err`).
///
/// # Safety
/// `net` is null or a live network; `err` is null or has `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_net_send(
    net: *mut MopedG5Net,
    src: u32,
    dst: u32,
    bytes: u32,
    vnet: u32,
    now: u64,
    err: *mut c_char,
    err_len: usize,
) -> u64 {
    // SAFETY: the caller's promise; the network is not shared between threads.
    let Some(n) = (unsafe { net.as_mut() }) else {
        write_c("net: a null pointer", err, err_len);
        return u64::MAX;
    };
    let sent = catch_unwind(AssertUnwindSafe(|| {
        n.net.send(ruby_msg(src, dst, bytes, vnet, now))
    }));
    match sent {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            write_c(&e, err, err_len);
            u64::MAX
        }
        Err(p) => {
            write_c(&panic_text(p), err, err_len);
            u64::MAX
        }
    }
}

/// A Ruby message on the host's network, beside the MOPEDs' messages: the cycle it
/// arrives, or `u64::MAX` when it fails the run (see [`moped_g5_error`]).
///
/// # Safety
/// `host` is null or a live host.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_host_net_send(
    host: *mut MopedG5Host,
    src: u32,
    dst: u32,
    bytes: u32,
    vnet: u32,
    now: u64,
) -> u64 {
    with_host(host, u64::MAX, u64::MAX, |h| {
        h.ruby_send(ruby_msg(src, dst, bytes, vnet, now))
            .unwrap_or(u64::MAX)
    })
}

/// 1 if `net` has the links of the host's network (so the host can take its messages
/// over), else 0.
///
/// # Safety
/// `host` and `net` are null or live.
#[no_mangle]
pub unsafe extern "C" fn moped_g5_net_matches(
    host: *const MopedG5Host,
    net: *const MopedG5Net,
) -> c_int {
    // SAFETY: the caller's promise.
    let Some(n) = (unsafe { net.as_ref() }) else {
        return 0;
    };
    read_host(host, 0, |h| c_int::from(h.net_matches(&n.net)))
}
