//! Logging as cuFile's: the level comes from `CUFILE_LOGGING_LEVEL` (or the JSON file's
//! `logging.level`, or a staged parameter), messages go to `CUFILE_LOGFILE_PATH` when set, else
//! to standard error. Nothing is written into the working directory (NVIDIA's library writes
//! `cufile.log` there).

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::params::LOG_LEVELS;

/// Index into [`LOG_LEVELS`]; ERROR until the driver opens.
static THRESHOLD: AtomicU8 = AtomicU8::new(5);

/// A message's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Every call.
    Trace = 0,
    /// Details.
    Debug = 1,
    /// Path decisions.
    Info = 2,
    /// Notable.
    Notice = 3,
    /// Suspicious.
    Warn = 4,
    /// Failed.
    Error = 5,
}

/// The level index of a name (`"info"`, `"WARN"`), if it is one.
pub fn parse(name: &str) -> Option<u8> {
    let up = name.trim().to_ascii_uppercase();
    LOG_LEVELS.iter().position(|l| *l == up).map(|i| i as u8)
}

/// Sets the threshold from a level name; unknown names keep the current one.
pub fn set_threshold(name: &str) {
    if let Some(i) = parse(name) {
        THRESHOLD.store(i, Ordering::Relaxed);
    }
}

/// True when messages of `level` are written.
pub fn enabled(level: Level) -> bool {
    level as u8 >= THRESHOLD.load(Ordering::Relaxed)
}

/// Writes `msg` when `level` is enabled.
pub fn log(level: Level, msg: impl FnOnce() -> String) {
    if !enabled(level) {
        return;
    }
    let line = format!("gdio-cufile {}: {}\n", LOG_LEVELS[level as usize], msg());
    if let Some(path) = std::env::var_os("CUFILE_LOGFILE_PATH") {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = f.write_all(line.as_bytes());
            return;
        }
    }
    let _ = std::io::stderr().write_all(line.as_bytes());
}
