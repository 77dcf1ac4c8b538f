//! Every path-selection rule of cuFile's compatibility-mode table and hipFile's backend scoring,
//! one row each, named after the rule. Files are fake probes; the gds platform is injected.

use std::path::PathBuf;
use std::sync::Arc;

use gdio::backend::gds::{self, GdsPlatform};
use gdio::backend::{select, Backend, Op, Request, Score};
use gdio::engine::Engine;
use gdio::file::{AlignSource, DirectIo, FileInfo, FileType, FsInfo};
use gdio::gpu::sim::SimRuntime;
use gdio::{BufferRef, Config, FileHandle, MemoryKind, Result};

/// The gds scoring on an injected platform and registration outcome.
#[derive(Debug)]
struct TableGds {
    platform: GdsPlatform,
    registration: Option<std::result::Result<(), String>>,
}

impl Backend for TableGds {
    fn name(&self) -> &'static str {
        "gds"
    }
    fn is_fastpath(&self) -> bool {
        true
    }
    fn score(&self, req: &Request<'_>, config: &Config) -> Score {
        gds::score_with(&self.platform, self.registration.as_ref(), req, config)
    }
    unsafe fn read(&self, _: &FileHandle, _: BufferRef, _: u64) -> Result<usize> {
        unreachable!("the table only scores")
    }
    unsafe fn write(&self, _: &FileHandle, _: BufferRef, _: u64) -> Result<usize> {
        unreachable!("the table only scores")
    }
}

fn file(fs: &str, super_options: &[&str]) -> FileInfo {
    FileInfo {
        path: PathBuf::from(format!("/mnt/{fs}/model.bin")),
        file_type: FileType::Regular,
        size: 1 << 30,
        dev: (259, 1),
        fs: FsInfo {
            magic: 0,
            name: fs.to_owned(),
            mount_point: Some(PathBuf::from(format!("/mnt/{fs}"))),
            source: Some("/dev/nvme0n1".into()),
            mount_options: vec!["rw".into()],
            super_options: super_options.iter().map(|s| (*s).to_owned()).collect(),
        },
        direct_io: DirectIo { supported: true, reason: None },
        dio_mem_align: 4096,
        dio_offset_align: 4096,
        align_source: AlignSource::Statx,
    }
}

fn ext4() -> FileInfo {
    file("ext4", &["errors=remount-ro"])
}

const MIB: u64 = 1 << 20;
const ADDR: u64 = 1 << 40;
const DEV: MemoryKind = MemoryKind::Device { ordinal: 0 };

struct Row {
    rule: &'static str,
    file: FileInfo,
    config: Config,
    platform: GdsPlatform,
    registration: Option<std::result::Result<(), String>>,
    op: Op,
    memory: MemoryKind,
    offset: u64,
    len: u64,
    addr: u64,
    /// The backend that must serve, `None` for "every backend rejects".
    want: Option<&'static str>,
    /// A piece of gds's reason (its accept or reject reason).
    gds_reason: &'static str,
}

fn row(rule: &'static str) -> Row {
    Row {
        rule,
        file: ext4(),
        config: Config::default(),
        platform: GdsPlatform::ready(),
        registration: Some(Ok(())),
        op: Op::Read,
        memory: DEV,
        offset: 0,
        len: MIB,
        addr: ADDR,
        want: Some("gds"),
        gds_reason: "cuFileRead",
    }
}

impl Row {
    fn file(mut self, f: FileInfo) -> Self {
        self.file = f;
        self
    }
    fn config(mut self, f: impl FnOnce(&mut Config)) -> Self {
        f(&mut self.config);
        self
    }
    fn platform(mut self, f: impl FnOnce(&mut GdsPlatform)) -> Self {
        f(&mut self.platform);
        self
    }
    fn write(mut self) -> Self {
        self.op = Op::Write;
        self
    }
    fn memory(mut self, m: MemoryKind) -> Self {
        self.memory = m;
        self
    }
    fn at(mut self, offset: u64, len: u64, addr: u64) -> Self {
        (self.offset, self.len, self.addr) = (offset, len, addr);
        self
    }
    fn registration(mut self, r: std::result::Result<(), String>) -> Self {
        self.registration = Some(r);
        self
    }
    fn want(mut self, backend: Option<&'static str>, gds_reason: &'static str) -> Self {
        self.want = backend;
        self.gds_reason = gds_reason;
        self
    }
}

fn rows() -> Vec<Row> {
    let lustre = || file("lustre", &[]);
    let weka = || file("wekafs", &[]);
    let nfs = || file("nfs", &[]);
    let tmpfs = || file("tmpfs", &[]);
    let compat = Some("compat");
    vec![
        // hipFile fastpath acceptance: O_DIRECT, device memory, regular file on ext4 ordered/xfs
        // or a block device, aligned offset, size and buffer.
        row("fastpath_serves_aligned_device_io_on_ext4_data_ordered"),
        row("fastpath_serves_ext4_without_data_option_as_ordered").file(file("ext4", &[])),
        row("fastpath_serves_xfs").file(file("xfs", &[])),
        row("fastpath_serves_aligned_writes").write().want(Some("gds"), "cuFileWrite"),
        row("fastpath_serves_block_device_on_any_fs").file({
            let mut f = file("devtmpfs", &[]);
            f.file_type = FileType::BlockDevice;
            f
        }),
        row("fastpath_rejects_ext4_data_journal")
            .file(file("ext4", &["data=journal"]))
            .want(compat, "data=journal"),
        row("fastpath_rejects_ext4_data_writeback")
            .file(file("ext4", &["data=writeback"]))
            .want(compat, "data=writeback"),
        row("fastpath_rejects_unsupported_fs_tmpfs")
            .file(tmpfs())
            .want(compat, "tmpfs is not a filesystem"),
        row("fastpath_rejects_nfs_without_unsupported_file_systems")
            .file(nfs())
            .want(compat, "nfs is not a filesystem"),
        row("unsupported_file_systems_lets_fastpath_serve_tmpfs")
            .file(tmpfs())
            .config(|c| c.unsupported_file_systems = true),
        row("unsupported_file_systems_lets_fastpath_serve_ext4_journal")
            .file(file("ext4", &["data=journal"]))
            .config(|c| c.unsupported_file_systems = true),
        row("fastpath_rejects_file_without_o_direct")
            .file({
                let mut f = ext4();
                f.direct_io = DirectIo {
                    supported: false,
                    reason: Some("the filesystem refuses O_DIRECT (EINVAL)".into()),
                };
                f
            })
            .want(compat, "no O_DIRECT descriptor"),
        row("fastpath_rejects_other_file_types")
            .file({
                let mut f = ext4();
                f.file_type = FileType::Other;
                f
            })
            .want(compat, "not a regular file or block device"),
        row("host_memory_goes_to_host_backend")
            .memory(MemoryKind::Host)
            .want(Some("host"), "needs device memory"),
        row("pinned_host_memory_goes_to_host_backend")
            .memory(MemoryKind::PinnedHost)
            .want(Some("host"), "needs device memory"),
        row("managed_memory_is_rejected_by_every_backend")
            .memory(MemoryKind::Managed)
            .want(None, "needs device memory"),
        row("fastpath_rejects_unaligned_file_offset")
            .at(512, MIB, ADDR)
            .want(compat, "file offset 512"),
        row("fastpath_rejects_unaligned_size").at(0, MIB + 100, ADDR).want(compat, "size 1048676"),
        row("fastpath_rejects_unaligned_buffer_address")
            .at(0, MIB, ADDR + 256)
            .want(compat, "buffer address"),
        row("fastpath_uses_statx_offset_alignment_512")
            .file({
                let mut f = ext4();
                f.dio_offset_align = 512;
                f.dio_mem_align = 4;
                f
            })
            .at(512, 1536, ADDR + 4),
        row("fastpath_rejects_zero_dio_alignment")
            .file({
                let mut f = ext4();
                f.dio_offset_align = 0;
                f
            })
            .want(compat, "no direct-I/O alignment"),
        // cuFile compatibility-mode switches.
        row("unaligned_write_with_posix_unaligned_writes_goes_to_compat")
            .write()
            .at(100, 5000, ADDR)
            .config(|c| c.posix_unaligned_writes = true)
            .want(compat, "posix_unaligned_writes=true"),
        row("aligned_write_with_posix_unaligned_writes_stays_on_fastpath")
            .write()
            .config(|c| c.posix_unaligned_writes = true)
            .want(Some("gds"), "cuFileWrite"),
        row("unaligned_read_with_posix_unaligned_writes_is_not_affected_by_it")
            .at(100, 5000, ADDR)
            .config(|c| c.posix_unaligned_writes = true)
            .want(compat, "file offset 100"),
        row("posix_gds_min_kb_forces_compat_for_small_io")
            .file(lustre())
            .at(0, 64 * 1024, ADDR)
            .config(|c| c.fs.get_mut("lustre").unwrap().posix_gds_min_kb = 64)
            .want(compat, "posix_gds_min_kb=64"),
        row("posix_gds_min_kb_forces_compat_for_small_io_even_when_compat_is_disallowed")
            .file(lustre())
            .at(0, 4096, ADDR)
            .config(|c| {
                c.fs.get_mut("lustre").unwrap().posix_gds_min_kb = 64;
                c.allow_compat_mode = false;
            })
            .want(compat, "posix_gds_min_kb=64"),
        row("posix_gds_min_kb_leaves_larger_io_on_fastpath")
            .file(lustre())
            .at(0, 64 * 1024 + 4096, ADDR)
            .config(|c| {
                c.fs.get_mut("lustre").unwrap().posix_gds_min_kb = 64;
                c.unsupported_file_systems = true;
            }),
        row("wekafs_writes_go_posix_when_rdma_write_support_is_false")
            .file(weka())
            .write()
            .config(|c| c.unsupported_file_systems = true)
            .want(compat, "fs.wekafs.rdma_write_support=false"),
        row("wekafs_writes_go_posix_when_rdma_write_support_is_false_even_with_compat_disallowed")
            .file(weka())
            .write()
            .config(|c| {
                c.unsupported_file_systems = true;
                c.allow_compat_mode = false;
            })
            .want(compat, "fs.wekafs.rdma_write_support=false"),
        row("wekafs_reads_are_not_affected_by_rdma_write_support")
            .file(weka())
            .config(|c| c.unsupported_file_systems = true),
        row("wekafs_writes_use_fastpath_when_rdma_write_support_is_true")
            .file(weka())
            .write()
            .config(|c| {
                c.unsupported_file_systems = true;
                c.fs.get_mut("wekafs").unwrap().rdma_write_support = true;
            })
            .want(Some("gds"), "cuFileWrite"),
        row("dynamic_routing_with_sys_mem_order_sends_distributed_fs_io_to_compat")
            .file(nfs())
            .config(|c| {
                c.unsupported_file_systems = true;
                c.rdma_dynamic_routing = true;
                c.rdma_dynamic_routing_order = vec!["SYS_MEM".into()];
            })
            .want(compat, "SYS_MEM"),
        row("dynamic_routing_with_sys_mem_order_leaves_local_fs_alone").config(|c| {
            c.rdma_dynamic_routing = true;
            c.rdma_dynamic_routing_order = vec!["SYS_MEM".into()];
        }),
        row("dynamic_routing_off_ignores_the_order").file(nfs()).config(|c| {
            c.unsupported_file_systems = true;
            c.rdma_dynamic_routing_order = vec!["SYS_MEM".into()];
        }),
        row("dynamic_routing_with_gpu_mem_first_keeps_fastpath").file(nfs()).config(|c| {
            c.unsupported_file_systems = true;
            c.rdma_dynamic_routing = true;
        }),
        row("direct_writes_off_sends_writes_to_compat")
            .write()
            .config(|c| c.gds_rdma_write_support = false)
            .want(compat, "gds_rdma_write_support=false"),
        row("direct_writes_off_leaves_reads_on_fastpath")
            .config(|c| c.gds_rdma_write_support = false),
        row("direct_writes_off_with_compat_disallowed_fails_writes")
            .write()
            .config(|c| {
                c.gds_rdma_write_support = false;
                c.allow_compat_mode = false;
            })
            .want(None, "gds_rdma_write_support=false"),
        // Platform.
        row("nvidia_fs_absent_sends_reads_to_compat")
            .platform(|p| p.nvidia_fs = false)
            .want(compat, "nvidia-fs is not loaded"),
        row("nvidia_fs_absent_sends_writes_to_compat")
            .write()
            .platform(|p| p.nvidia_fs = false)
            .want(compat, "nvidia-fs is not loaded"),
        row("p2pdma_kernel_without_use_pci_p2pdma_goes_to_compat")
            .platform(|p| {
                p.nvidia_fs = false;
                p.p2pdma = true;
            })
            .want(compat, "use_pci_p2pdma=true"),
        row("p2pdma_kernel_with_use_pci_p2pdma_uses_fastpath")
            .platform(|p| {
                p.nvidia_fs = false;
                p.p2pdma = true;
            })
            .config(|c| c.use_pci_p2pdma = true),
        row("no_cuda_runtime_goes_to_compat")
            .platform(|p| {
                p.cuda = Err("the GPU runtime is host (no CUDA GPU): gds needs CUDA".into())
            })
            .want(compat, "no CUDA GPU"),
        row("libcufile_missing_goes_to_compat")
            .platform(|p| {
                p.library = Err("libcufile not found (libcufile.so.0: cannot open)".into())
            })
            .want(compat, "libcufile not found"),
        row("driver_open_failure_goes_to_compat")
            .platform(|p| {
                p.driver =
                    Err("cuFileDriverOpen failed: 5007 CU_FILE_PLATFORM_NOT_SUPPORTED".into())
            })
            .want(compat, "cuFileDriverOpen failed"),
        row("register_failure_5027_is_a_reject_remembered_for_the_file")
            .registration(Err(
                "cuFileHandleRegister failed: 5027 CU_FILE_HANDLE_NOT_REGISTERED".into()
            ))
            .want(compat, "5027"),
        row("register_failure_with_compat_disallowed_fails_the_io")
            .registration(Err(
                "cuFileHandleRegister failed: 5027 CU_FILE_HANDLE_NOT_REGISTERED".into()
            ))
            .config(|c| c.allow_compat_mode = false)
            .want(None, "5027"),
        // Force and allow compat.
        row("force_compat_never_uses_fastpath_for_reads")
            .config(|c| c.force_compat_mode = true)
            .want(compat, "force_compat_mode=true"),
        row("force_compat_never_uses_fastpath_for_writes")
            .write()
            .config(|c| c.force_compat_mode = true)
            .want(compat, "force_compat_mode=true"),
        row("force_compat_with_compat_disallowed_still_serves_through_compat")
            .config(|c| {
                c.force_compat_mode = true;
                c.allow_compat_mode = false;
            })
            .want(compat, "force_compat_mode=true"),
        row("fallback_rejects_when_compat_is_disallowed")
            .at(512, MIB, ADDR)
            .config(|c| c.allow_compat_mode = false)
            .want(None, "file offset 512"),
        row("compat_disallowed_leaves_fastpath_serving").config(|c| c.allow_compat_mode = false),
        row("host_memory_is_served_even_when_compat_is_disallowed")
            .memory(MemoryKind::Host)
            .config(|c| c.allow_compat_mode = false)
            .want(Some("host"), "needs device memory"),
        // Order of the reject reasons: configuration, platform, file, memory kind, alignment.
        row("reason_order_configuration_before_platform")
            .config(|c| c.force_compat_mode = true)
            .platform(|p| p.nvidia_fs = false)
            .want(compat, "force_compat_mode"),
        row("reason_order_platform_before_file")
            .file(tmpfs())
            .platform(|p| p.nvidia_fs = false)
            .want(compat, "nvidia-fs is not loaded"),
        row("reason_order_file_before_memory_kind")
            .file(tmpfs())
            .memory(MemoryKind::Host)
            .want(Some("host"), "tmpfs"),
        row("reason_order_memory_kind_before_alignment")
            .memory(MemoryKind::Host)
            .at(1, 3, ADDR + 1)
            .want(Some("host"), "needs device memory"),
    ]
}

#[test]
fn every_rule_row() {
    let rt = Arc::new(SimRuntime::new(1, std::time::Duration::ZERO));
    let mut failures = Vec::new();
    let rows = rows();
    let mut names = std::collections::HashSet::new();
    for r in &rows {
        assert!(names.insert(r.rule), "duplicate rule name {}", r.rule);
        let engine = Arc::new(Engine::new(rt.clone(), &r.config));
        let backends: Vec<Arc<dyn Backend>> = vec![
            Arc::new(TableGds {
                platform: r.platform.clone(),
                registration: r.registration.clone(),
            }),
            Arc::new(gdio::backend::compat::CompatBackend::new(engine.clone())),
            Arc::new(gdio::backend::host::HostBackend::new(engine)),
        ];
        let req = Request {
            op: r.op,
            file: &r.file,
            memory: r.memory,
            file_offset: r.offset,
            buf_addr: r.addr,
            len: r.len,
        };
        let d = select::decide(&backends, &req, &r.config);
        let gds = &d.scores[0].1;
        if d.backend != r.want {
            failures.push(format!(
                "{}: served by {:?}, want {:?} ({})",
                r.rule,
                d.backend,
                r.want,
                d.reasons()
            ));
        } else if !gds.reason.contains(r.gds_reason) {
            failures
                .push(format!("{}: gds reason {:?} lacks {:?}", r.rule, gds.reason, r.gds_reason));
        }
        // Scores are 100 / 1 / -1 and every reject has a reason.
        for (name, s) in &d.scores {
            assert!([100, 1, -1].contains(&s.score), "{}: {name} scored {}", r.rule, s.score);
            assert!(!s.reason.is_empty(), "{}: {name} gave no reason", r.rule);
        }
        assert_eq!(d.rejected.len(), d.scores.iter().filter(|(_, s)| s.score < 0).count());
        if d.backend.is_none() {
            // Every backend's reason is in the error.
            let e = select::no_backend_error(&d, &req);
            assert_eq!(e.kind(), gdio::ErrorKind::NoBackend);
            for (name, s) in &d.scores {
                let text = e.to_string();
                assert!(
                    text.contains(name) && text.contains(s.reason.as_ref()),
                    "{}: error {text} lacks {name}",
                    r.rule
                );
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rule rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

#[test]
fn real_gds_backend_rejects_with_a_reason_and_compat_serves() {
    // On a machine without nvidia-fs (or without CUDA: the sim runtime), gds says why and never
    // loads libcufile; compat serves device memory, host serves host memory.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    std::fs::write(&p, vec![1u8; 8192]).unwrap();
    let rt = Arc::new(SimRuntime::new(1, std::time::Duration::ZERO));
    let drv = gdio::Driver::with_runtime(Config::default(), rt).unwrap();
    let info = gdio::file::probe_path(&p).unwrap();
    for op in [Op::Read, Op::Write] {
        for aligned in [true, false] {
            let d = drv.explain(&info, op, DEV, aligned);
            assert_eq!(d.backend, Some("compat"), "{d:?}");
            let (name, why) = &d.rejected[0];
            assert_eq!(*name, "gds");
            assert!(why.contains("nvidia-fs") || why.contains("CUDA"), "{why}");
            let d = drv.explain(&info, op, MemoryKind::Host, aligned);
            assert_eq!(d.backend, Some("host"), "{d:?}");
            assert!(d.rejected.iter().any(|(n, _)| *n == "compat"));
        }
    }
}
