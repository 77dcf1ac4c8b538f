//! Host memory available to this process: `MemAvailable`, and the limit of its cgroup (v2
//! `memory.max` less `memory.current`, or v1 `memory.limit_in_bytes` less usage), whichever is
//! smaller. The bench checks it before it allocates, instead of being killed by the OOM killer.

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// (limit, in use) of this process's cgroup, when it has a limit.
fn cgroup() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.is_empty() {
            let base = format!("/sys/fs/cgroup{path}");
            if let Some(max) = read_u64(&format!("{base}/memory.max")) {
                let cur = read_u64(&format!("{base}/memory.current")).unwrap_or(0);
                return Some((max, cur));
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            let base = format!("/sys/fs/cgroup/memory{path}");
            let max = read_u64(&format!("{base}/memory.limit_in_bytes"))?;
            if max >= 1 << 60 {
                return None;
            }
            let cur = read_u64(&format!("{base}/memory.usage_in_bytes")).unwrap_or(0);
            return Some((max, cur));
        }
    }
    None
}

/// Bytes this process may still allocate, and a phrase that says where the number came from.
pub fn available() -> Option<(u64, String)> {
    let sys = meminfo_available();
    let cg = cgroup().map(|(max, cur)| (max.saturating_sub(cur), max));
    match (sys, cg) {
        (Some(s), Some((c, max))) if c < s => Some((
            c,
            format!("left under the cgroup memory limit of {}", crate::units::format_size(max)),
        )),
        (Some(s), _) => Some((s, "available (MemAvailable)".into())),
        (None, Some((c, max))) => Some((
            c,
            format!("left under the cgroup memory limit of {}", crate::units::format_size(max)),
        )),
        (None, None) => None,
    }
}

/// Refuses to start when `need` bytes (`what` says for what) exceed what is available.
pub fn check(need: u64, what: &str) -> Result<(), String> {
    if let Some((avail, source)) = available() {
        if need > avail {
            return Err(format!(
                "{what} needs about {} of host memory, but only {} is {source}: use a smaller \
                 --size (or --target gpu, or a --dir that is not tmpfs)",
                crate::units::format_size(need),
                crate::units::format_size(avail)
            ));
        }
    }
    Ok(())
}
