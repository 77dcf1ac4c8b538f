//! Which reads a worker issues through its own io_uring (`io_engine`): the engine's choice,
//! shared by its workers, and each worker's ring, made the first time a read wants it. Where
//! a ring cannot be set up the reason is kept (once per engine) and the workers read with
//! `pread`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::config::IoEngine;
use crate::file::uring::{Ring, RING_ENTRIES};

/// The engine's `io_engine` and what came of it.
#[derive(Debug)]
pub(crate) struct IoChoice {
    engine: IoEngine,
    /// Why io_uring is not used, once a worker failed to set up its ring.
    unavailable: OnceLock<String>,
    /// Reads that went through a ring.
    pub uring_reads: AtomicU64,
}

impl IoChoice {
    pub(crate) fn new(engine: IoEngine) -> IoChoice {
        IoChoice { engine, unavailable: OnceLock::new(), uring_reads: AtomicU64::new(0) }
    }

    /// Why this engine's workers read with `pread` although `io_engine` asked for io_uring
    /// where it wins; `None` while no ring failed (or none was wanted).
    pub(crate) fn unavailable(&self) -> Option<&str> {
        self.unavailable.get().map(String::as_str)
    }
}

/// What a worker is about to read, for the choice between its ring and `pread`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// One read (a host task, one bounce chunk). `auto`: `pread` (the ring lost on both
    /// tmpfs and ext4, BENCHMARKS.md "io_uring (CPU-only)").
    Single,
    /// A gathered group's page-cache pieces. `auto`: `pread` (no win measured).
    Gathered,
    /// A worker's `direct_reads_in_flight` cold `O_DIRECT` chunks. `auto`: `pread` on helper
    /// threads (on the H200 the ring read 1.66 GB/s cold against 1.74 with `pread`, one run
    /// each, BENCHMARKS.md session 4).
    ColdInFlight,
}

/// The shapes `auto` sends through a worker's ring: those measured faster there than with
/// `pread`. None so far (see [`Shape`]); a shape moves here with its measurement.
fn auto_uses_ring(shape: Shape) -> bool {
    match shape {
        Shape::Single | Shape::Gathered | Shape::ColdInFlight => false,
    }
}

/// One worker's ring, made on first use.
#[derive(Debug)]
pub(crate) struct WorkerRing {
    choice: Option<Arc<IoChoice>>,
    ring: Option<Ring>,
    /// Set-up was tried (and failed, when `ring` is `None`).
    tried: bool,
}

impl WorkerRing {
    /// The ring of a worker of an engine that chose `choice`.
    pub(crate) fn new(choice: Arc<IoChoice>) -> WorkerRing {
        WorkerRing { choice: Some(choice), ring: None, tried: false }
    }

    /// No ring: every read with `pread` (a caller's own thread).
    pub(crate) fn none() -> WorkerRing {
        WorkerRing { choice: None, ring: None, tried: true }
    }

    /// The ring for `reads` reads of `shape` to be issued at once, or `None` when they go with
    /// `pread`. Under `auto` the ring serves the shapes it measured faster for (none so far,
    /// see [`Shape`]); under `io_uring` every shape.
    pub(crate) fn for_reads(&mut self, reads: usize, shape: Shape) -> Option<&mut Ring> {
        let choice = self.choice.as_ref()?;
        let wanted = reads > 0
            && match choice.engine {
                IoEngine::Pread => false,
                IoEngine::Auto => auto_uses_ring(shape),
                IoEngine::IoUring => true,
            };
        if !wanted || (choice.unavailable.get().is_some() && self.ring.is_none()) {
            return None;
        }
        if !self.tried {
            self.tried = true;
            match Ring::new(RING_ENTRIES) {
                Ok(r) => self.ring = Some(r),
                Err(errno) => {
                    let why = format!(
                        "io_uring_setup failed: {} (reading with pread); {}",
                        std::io::Error::from_raw_os_error(errno),
                        crate::platform::io_uring().detail
                    );
                    tracing::info!(%why, "engine worker without io_uring");
                    let _ = choice.unavailable.set(why);
                }
            }
        }
        let ring = self.ring.as_mut().filter(|r| !r.is_broken())?;
        choice.uring_reads.fetch_add(reads as u64, Ordering::Relaxed);
        Some(ring)
    }
}
