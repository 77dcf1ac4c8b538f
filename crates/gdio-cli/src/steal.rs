//! The words for the hypervisor's share of a VM's CPUs (`gdio::cpu_steal`) under a `gdio bench`
//! row and a `gdio load`.

/// The share of the CPUs from which the hypervisor's take is said: under it, noise.
pub const SAID_FROM: f64 = 0.01;

/// The line on the hypervisor's share of the CPUs (`share`, steal in `/proc/stat`) while
/// `what` (e.g. "this row ran"), where it took at least [`SAID_FROM`]: in a VM the copies out of
/// the page cache run on vCPUs the host may give to others, and I/O run while it did is slower
/// for a reason outside gdio (session 47: 0.2–0.8 % with four readers, 6.6–20.3 % with twelve
/// to sixteen on an H100 host whose readers fell from 7 GB/s each to under 3).
pub fn line(share: Option<f64>, what: &str) -> Option<String> {
    let share = share.filter(|s| *s >= SAID_FROM)?;
    Some(format!(
        "hypervisor: other work ran on this VM's CPUs {:.1} % of their time while {what} \
         (steal in /proc/stat); the CPU's copies slow with it",
        share * 100.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_said_from_one_percent_and_never_without_a_reading() {
        let l = line(Some(0.203), "this row ran").expect("a line");
        assert_eq!(
            l,
            "hypervisor: other work ran on this VM's CPUs 20.3 % of their time while this row \
             ran (steal in /proc/stat); the CPU's copies slow with it"
        );
        assert!(line(Some(SAID_FROM), "x").unwrap().contains("1.0 %"));
        assert_eq!(line(Some(0.009), "x"), None, "under one percent is noise");
        assert_eq!(line(Some(0.0), "x"), None);
        assert_eq!(line(None, "x"), None, "no /proc/stat, or too short a span to tell");
    }
}
