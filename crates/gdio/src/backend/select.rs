//! Selection and retry: every backend scores a request, the highest score serves it; when all
//! reject, the error lists every backend's reason. A fastpath that fails at run time with
//! ENODEV, EREMOTEIO or ENOTSUP is retried once on the best fallback that accepts the request
//! (none accepts when compat is disallowed); every other error fails at once, and a fallback's
//! failure is never retried.

use std::sync::Arc;

use super::{Backend, Reason, Request, Score};
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::stats::Stats;

/// The errnos of a fastpath failure that are retried on the fallback, with their names.
/// ENODEV and EREMOTEIO are hipFile's; ENOTSUP is what cuFile retries in compat for WekaFS
/// and GPFS.
pub const RETRY_ERRNOS: &[(i32, &str)] =
    &[(libc::ENODEV, "ENODEV"), (libc::EREMOTEIO, "EREMOTEIO"), (libc::EOPNOTSUPP, "ENOTSUP")];

/// What the selection decided for one request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Decision {
    /// The backend that serves the request, `None` when every backend rejected it.
    pub backend: Option<&'static str>,
    /// Every backend's score and reason, in the driver's order.
    pub scores: Vec<(&'static str, Score)>,
    /// The backends that rejected, with the first rule that ruled each out.
    pub rejected: Vec<(&'static str, Reason)>,
}

impl Decision {
    /// The reason of the serving backend (why it accepts), if one serves.
    pub fn reason(&self) -> Option<&str> {
        let name = self.backend?;
        self.scores.iter().find(|(n, _)| *n == name).map(|(_, s)| s.reason.as_ref())
    }

    /// Every reason as `backend: reason`, joined by `; ` (for error messages).
    pub fn reasons(&self) -> String {
        self.scores.iter().map(|(n, s)| format!("{n}: {}", s.reason)).collect::<Vec<_>>().join("; ")
    }
}

/// Scores `req` with every backend and picks the highest accepting one (the first listed wins
/// a tie).
pub fn decide(backends: &[Arc<dyn Backend>], req: &Request<'_>, config: &Config) -> Decision {
    let scores: Vec<(&'static str, Score)> =
        backends.iter().map(|b| (b.name(), b.score(req, config))).collect();
    let mut best: Option<(&'static str, i32)> = None;
    for (n, s) in &scores {
        if s.accepts() && best.is_none_or(|(_, b)| s.score > b) {
            best = Some((n, s.score));
        }
    }
    let rejected =
        scores.iter().filter(|(_, s)| !s.accepts()).map(|(n, s)| (*n, s.reason.clone())).collect();
    Decision { backend: best.map(|b| b.0), scores, rejected }
}

/// The error for a request every backend rejected: names the operation, the memory and every
/// backend's reason.
pub fn no_backend_error(decision: &Decision, req: &Request<'_>) -> Error {
    Error::new(
        ErrorKind::NoBackend,
        format!("no backend can {} {} memory: {}", req.op, req.memory, decision.reasons()),
    )
    .with_path(&req.file.path)
    .with_range(req.file_offset, req.len)
}

/// The retry cause of a fastpath error (`ENODEV`, `EREMOTEIO`, `ENOTSUP`), `None` when the
/// error must fail at once.
pub fn retry_cause(err: &Error) -> Option<&'static str> {
    let errno = err.errno()?;
    RETRY_ERRNOS.iter().find(|(e, _)| *e == errno).map(|(_, n)| *n)
}

/// Runs `req`: decides, calls `io` on the chosen backend, applies the retry policy, counts
/// everything in `stats`. `io` performs the read or write on the backend it is given.
pub fn run(
    backends: &[Arc<dyn Backend>],
    req: &Request<'_>,
    config: &Config,
    stats: &Stats,
    io: impl Fn(&dyn Backend) -> Result<usize>,
) -> Result<usize> {
    let decision = decide(backends, req, config);
    let Some(name) = decision.backend else {
        return Err(no_backend_error(&decision, req));
    };
    let Some(chosen) = backends.iter().find(|b| b.name() == name) else {
        return Err(Error::new(ErrorKind::NoBackend, format!("backend {name} vanished")));
    };
    match io(chosen.as_ref()) {
        Ok(n) => {
            stats.record_ok(name, n as u64);
            if !chosen.is_fastpath()
                && matches!(req.memory, crate::memory::MemoryKind::Device { .. })
            {
                // A fallback serving device memory, which a fastpath exists for: count why the
                // fastpath did not. (Host memory is the host backend's own, not a fallback.)
                let fast = backends.iter().find(|b| b.is_fastpath()).map(|b| b.name());
                if let Some(reason) =
                    fast.and_then(|f| decision.rejected.iter().find(|(n, _)| *n == f))
                {
                    stats.record_fallback(name, &format!("{}: {}", reason.0, reason.1));
                }
            }
            Ok(n)
        }
        Err(e) => {
            stats.record_error(name);
            if !chosen.is_fastpath() {
                return Err(e);
            }
            let Some(cause) = retry_cause(&e) else {
                return Err(e);
            };
            // The best fallback that accepts the same request.
            let fallback = backends
                .iter()
                .filter(|b| !b.is_fastpath())
                .map(|b| (b, b.score(req, config)))
                .filter(|(_, s)| s.accepts())
                .max_by_key(|(_, s)| s.score);
            let Some((fb, _)) = fallback else {
                let why = decision
                    .scores
                    .iter()
                    .filter(|(n, _)| *n != name)
                    .map(|(n, s)| format!("{n}: {}", s.reason))
                    .collect::<Vec<_>>()
                    .join("; ");
                // Pass the error on with its kind, errno and driver code; add the reason.
                let errno = e.errno().unwrap_or(libc::EIO);
                return Err(e
                    .map_message(|m| format!("{m} (not retried on a fallback: {why})"))
                    .with_errno(errno)
                    .with_path(&req.file.path)
                    .with_range(req.file_offset, req.len));
            };
            stats.record_retry(name, cause);
            tracing::debug!(
                backend = name,
                fallback = fb.name(),
                cause,
                "retrying {} on the fallback: {e}",
                req.op
            );
            match io(fb.as_ref()) {
                Ok(n) => {
                    stats.record_ok(fb.name(), n as u64);
                    stats.record_fallback(fb.name(), &format!("{name} failed with {cause}"));
                    Ok(n)
                }
                Err(e2) => {
                    stats.record_error(fb.name());
                    Err(e2)
                }
            }
        }
    }
}
