//! The process-wide gdio state behind the Python package: the configuration (`gdio.defaults`),
//! and the driver and future pool built from it on first use and rebuilt after a change.
//! Futures in flight keep the driver and pool they started on.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use gdio::{Config, Driver, Error, ErrorKind, LoadedConfig};
use serde_json::Value;

use crate::dispatch::Dispatch;

/// A driver and the pool that runs futures on it.
pub struct Runtime {
    /// The gdio driver.
    pub driver: Arc<Driver>,
    /// The pool of future workers (as many as the driver's `threads`).
    pub dispatch: Dispatch,
    /// Futures' GPU parts go to the pool too, not to the engine (`GDIO_PY_POOL=1`: the path
    /// before session 10, kept to measure the two in one run).
    pub pool_only: bool,
    /// The simulated GPUs the driver runs on (`GDIO_SIMULATE_GPUS`), for the tests' hooks.
    pub sim: Option<Arc<gdio::gpu::sim::SimRuntime>>,
}

#[derive(Default)]
struct State {
    config: Option<LoadedConfig>,
    current: Option<Arc<Runtime>>,
}

static STATE: Mutex<State> = Mutex::new(State { config: None, current: None });

fn lock() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

fn config_of(s: &mut State) -> gdio::Result<&mut LoadedConfig> {
    if s.config.is_none() {
        s.config = Some(Config::load()?);
    }
    Ok(s.config.as_mut().expect("set above"))
}

/// The runtime for the configuration now when it is built and the state is free this instant;
/// `None` means: call [`runtime`] (which may block) without the GIL.
pub fn current() -> Option<Arc<Runtime>> {
    let s = match STATE.try_lock() {
        Ok(s) => s,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return None,
    };
    s.current.clone()
}

/// The runtime for the configuration now (built on first use: loads CUDA when present).
pub fn runtime() -> gdio::Result<Arc<Runtime>> {
    let mut s = lock();
    if let Some(rt) = &s.current {
        return Ok(rt.clone());
    }
    let loaded = config_of(&mut s)?.clone();
    let threads = loaded.config().threads;
    // Tests without a GPU: the engine's GPU paths on simulated GPUs (host memory whose copies
    // land late), so CI runs them too.
    let sim = simulated_gpus().map(|n| {
        SIM.get_or_init(|| {
            Arc::new(gdio::gpu::sim::SimRuntime::new(n, std::time::Duration::from_micros(50)))
        })
        .clone()
    });
    let driver = Arc::new(match &sim {
        Some(rt) => Driver::with_runtime(loaded.config().clone(), rt.clone())?,
        None => Driver::from_loaded(loaded)?,
    });
    let dispatch = Dispatch::new(threads)
        .map_err(|e| Error::from_io(&e, "cannot start the gdio future workers"))?;
    let pool_only = std::env::var("GDIO_PY_POOL").is_ok_and(|v| v == "1");
    let rt = Arc::new(Runtime { driver, dispatch, pool_only, sim });
    s.current = Some(rt.clone());
    Ok(rt)
}

/// The process's simulated GPUs: one runtime for every driver, as a CUDA device's memory and
/// streams outlive the drivers built after a configuration change (or `bounce_buffer_free`).
static SIM: OnceLock<Arc<gdio::gpu::sim::SimRuntime>> = OnceLock::new();

/// The simulated runtime `driver` runs on, when it runs on one (the tests' streams are its
/// streams).
pub fn sim_of(driver: &Driver) -> Option<Arc<gdio::gpu::sim::SimRuntime>> {
    let target = Arc::as_ptr(driver.runtime()) as *const ();
    SIM.get().filter(|s| Arc::as_ptr(s) as *const () == target).cloned()
}

/// `GDIO_SIMULATE_GPUS=N` (N ≥ 1): the process runs on N simulated GPUs instead of CUDA, for
/// tests of the GPU paths on machines without one.
pub fn simulated_gpus() -> Option<usize> {
    std::env::var("GDIO_SIMULATE_GPUS").ok()?.parse().ok().filter(|n| *n > 0)
}

/// Takes the current driver and pool out of use (the next I/O builds new ones with the same
/// configuration) and hands them back to be dropped, without this module's lock held.
/// Futures in flight keep theirs until they finish.
pub fn release() -> Option<Arc<Runtime>> {
    lock().current.take()
}

/// The value of configuration key `key` (gdio's name).
pub fn get(key: &str) -> gdio::Result<Value> {
    let mut s = lock();
    let c = config_of(&mut s)?;
    gdio::config::keys::get(c.config(), key)
        .ok_or_else(|| Error::new(ErrorKind::Config, format!("unknown configuration key {key}")))
}

/// Every configuration key with its value.
pub fn all() -> gdio::Result<Vec<(String, Value)>> {
    let mut s = lock();
    let c = config_of(&mut s)?.config();
    Ok(gdio::config::keys::all(c)
        .into_iter()
        .filter_map(|k| gdio::config::keys::get(c, &k).map(|v| (k, v)))
        .collect())
}

/// Sets every `(key, value)` at once (all or none: a bad key or value changes nothing) and
/// returns the old values. The next I/O runs on a driver with the new configuration.
pub fn set(pairs: &[(String, Value)]) -> gdio::Result<Vec<(String, Value)>> {
    let mut s = lock();
    let mut next = config_of(&mut s)?.clone();
    let mut old = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let before = gdio::config::keys::get(next.config(), k).ok_or_else(|| {
            Error::new(ErrorKind::Config, format!("unknown configuration key {k}"))
        })?;
        old.push((k.clone(), before));
        next.set(k, v.clone())?;
    }
    next.config().validate()?;
    s.config = Some(next);
    s.current = None;
    Ok(old)
}
