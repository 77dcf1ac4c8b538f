//! Keeping a worker next to its GPU: on a machine of several NUMA nodes, a worker that moves
//! bytes for GPU N runs on the CPUs of GPU N's node, so its pinned bounce buffers are allocated
//! there (first touch) and its copies into them, and the GPU's DMA out of them, stay on one
//! socket instead of crossing the inter-socket link. One node (most machines): nothing changes.

use std::collections::HashMap;
use std::sync::Mutex;

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

use crate::gpu::GpuRuntime;

/// The CPU sets of the GPUs' nodes, learned once per GPU.
#[derive(Default)]
pub(crate) struct GpuNodes {
    cpus: Mutex<HashMap<usize, Option<CpuSet>>>,
}

impl GpuNodes {
    /// The CPUs a worker serving GPU `ordinal` should run on: those of the GPU's NUMA node that
    /// this process may use; `None` on a one-node machine or when sysfs does not say.
    pub(crate) fn cpus_for(&self, runtime: &dyn GpuRuntime, ordinal: usize) -> Option<CpuSet> {
        let mut m = self.cpus.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry(ordinal).or_insert_with(|| gpu_node_cpus(runtime, ordinal))
    }
}

thread_local! {
    /// The GPU whose node the calling worker runs on now.
    static PLACED_FOR: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Moves the calling worker onto the CPUs of GPU `ordinal`'s node, unless it is there already.
pub(crate) fn place(nodes: &GpuNodes, runtime: &dyn GpuRuntime, ordinal: usize) {
    if PLACED_FOR.with(|p| p.get()) == Some(ordinal) {
        return;
    }
    PLACED_FOR.with(|p| p.set(Some(ordinal)));
    if let Some(cpus) = nodes.cpus_for(runtime, ordinal) {
        run_on(&cpus);
    }
}

/// Moves the calling thread onto `cpus` (an error is ignored: the thread stays where it was).
fn run_on(cpus: &CpuSet) {
    if let Err(e) = sched_setaffinity(None, cpus) {
        tracing::debug!(error = %e, "cannot move a worker to its GPU's NUMA node");
    }
}

fn gpu_node_cpus(runtime: &dyn GpuRuntime, ordinal: usize) -> Option<CpuSet> {
    let online = std::fs::read_to_string("/sys/devices/system/node/online").ok()?;
    if parse_cpu_list(online.trim())?.len() < 2 {
        return None;
    }
    let bus = runtime.device_info(ordinal).ok()?.pci_bus_id?.to_ascii_lowercase();
    let node: i64 = std::fs::read_to_string(format!("/sys/bus/pci/devices/{bus}/numa_node"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if node < 0 {
        return None;
    }
    let list =
        std::fs::read_to_string(format!("/sys/devices/system/node/node{node}/cpulist")).ok()?;
    let allowed = sched_getaffinity(None).ok()?;
    let mut set = CpuSet::new();
    for cpu in parse_cpu_list(list.trim())? {
        if cpu < CpuSet::MAX_CPU && allowed.is_set(cpu) {
            set.set(cpu);
        }
    }
    (set.count() > 0).then_some(set)
}

/// Parses a kernel CPU (or node) list such as `0-15,32-47` or `3`.
pub(crate) fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    if s.is_empty() {
        return Some(out);
    }
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-3,8,10-11"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a-b"), None);
        assert_eq!(parse_cpu_list("0-99999999"), None);
    }

    #[test]
    fn the_host_and_sim_runtimes_ask_for_no_affinity() {
        // No PCI bus id: no node, whatever this machine is.
        let rt = crate::gpu::sim::SimRuntime::new(1, std::time::Duration::ZERO);
        assert!(GpuNodes::default().cpus_for(&rt, 0).is_none());
    }
}
