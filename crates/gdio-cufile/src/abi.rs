//! The C types of cufile.h 1.15 (x86-64 layouts, sizes asserted below and in tests) and
//! NVIDIA's error numbers.

#![allow(non_camel_case_types)]

use std::ffi::{c_int, c_uint, c_void};

/// `CUfileError_t`: 8 bytes, returned by value in `rax`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CUfileError_t {
    /// `CUfileOpError`.
    pub err: c_int,
    /// `CUresult`, meaningful when `err` is [`CUDA_DRIVER_ERROR`].
    pub cu_err: c_int,
}

impl CUfileError_t {
    /// `{0, 0}`.
    pub const OK: CUfileError_t = CUfileError_t { err: 0, cu_err: 0 };
    /// `{code, 0}`.
    pub const fn code(err: c_int) -> CUfileError_t {
        CUfileError_t { err, cu_err: 0 }
    }
}

/// `CUfileOpError` numbers (1.15).
pub mod code {
    #![allow(missing_docs)]
    pub const SUCCESS: i32 = 0;
    pub const DRIVER_NOT_INITIALIZED: i32 = 5001;
    pub const DRIVER_INVALID_PROPS: i32 = 5002;
    pub const DRIVER_UNSUPPORTED_LIMIT: i32 = 5003;
    pub const DRIVER_CLOSING: i32 = 5006;
    pub const IO_NOT_SUPPORTED: i32 = 5008;
    pub const DEVICE_NOT_SUPPORTED: i32 = 5009;
    pub const CUDA_DRIVER_ERROR: i32 = 5011;
    pub const CUDA_POINTER_INVALID: i32 = 5012;
    pub const CUDA_MEMORY_TYPE_INVALID: i32 = 5013;
    pub const CUDA_POINTER_RANGE_ERROR: i32 = 5014;
    pub const INVALID_FILE_TYPE: i32 = 5018;
    pub const INVALID_FILE_OPEN_FLAG: i32 = 5019;
    pub const INVALID_VALUE: i32 = 5022;
    pub const MEMORY_ALREADY_REGISTERED: i32 = 5023;
    pub const MEMORY_NOT_REGISTERED: i32 = 5024;
    pub const PERMISSION_DENIED: i32 = 5025;
    pub const DRIVER_ALREADY_OPEN: i32 = 5026;
    pub const HANDLE_NOT_REGISTERED: i32 = 5027;
    pub const HANDLE_ALREADY_REGISTERED: i32 = 5028;
    pub const DEVICE_NOT_FOUND: i32 = 5029;
    pub const INTERNAL_ERROR: i32 = 5030;
    pub const BATCH_SUBMIT_FAILED: i32 = 5035;
    pub const BATCH_FULL: i32 = 5037;
    pub const NOMEM_ERROR: i32 = 5043;
    pub const IO_ERROR: i32 = 5044;
}

pub use code::CUDA_DRIVER_ERROR;

/// `CU_FILE_HANDLE_TYPE_OPAQUE_FD`.
pub const HANDLE_TYPE_OPAQUE_FD: c_int = 1;
/// `CU_FILE_HANDLE_TYPE_OPAQUE_WIN32`.
pub const HANDLE_TYPE_OPAQUE_WIN32: c_int = 2;
/// `CU_FILE_HANDLE_TYPE_USERSPACE_FS`.
pub const HANDLE_TYPE_USERSPACE_FS: c_int = 3;

/// `CUfileDescr_t` (24 bytes): the handle union is read as an `int fd` for OPAQUE_FD.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CUfileDescr_t {
    /// `enum CUfileFileHandleType`.
    pub type_: c_int,
    /// `union { int fd; void *handle; }`.
    pub handle: *mut c_void,
    /// `const CUfileFSOps_t *`.
    pub fs_ops: *const c_void,
}

/// `nvfs` part of `CUfileDrvProps_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CUfileNvfsProps {
    /// nvidia-fs major version (0: none).
    pub major_version: c_uint,
    /// nvidia-fs minor version.
    pub minor_version: c_uint,
    /// KiB.
    pub poll_thresh_size: usize,
    /// KiB.
    pub max_direct_io_size: usize,
    /// Bits `1 << CUfileDriverStatusFlags_t`.
    pub dstatusflags: c_uint,
    /// Bits `1 << CUfileDriverControlFlags_t`.
    pub dcontrolflags: c_uint,
}

/// `CUfileDrvProps_t` (56 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CUfileDrvProps_t {
    /// Driver facts.
    pub nvfs: CUfileNvfsProps,
    /// Bits `1 << CUfileFeatureFlags_t`.
    pub fflags: c_uint,
    /// KiB.
    pub max_device_cache_size: c_uint,
    /// KiB.
    pub per_buffer_cache_size: c_uint,
    /// KiB.
    pub max_device_pinned_mem_size: c_uint,
    /// Entries.
    pub max_batch_io_size: c_uint,
    /// Milliseconds.
    pub max_batch_io_timeout_msecs: c_uint,
}

/// `CU_FILE_USE_POLL_MODE` bit of `dcontrolflags`.
pub const CONTROL_USE_POLL_MODE: c_uint = 1 << 0;
/// `CU_FILE_ALLOW_COMPAT_MODE` bit of `dcontrolflags`.
pub const CONTROL_ALLOW_COMPAT_MODE: c_uint = 1 << 1;
/// `CU_FILE_DYN_ROUTING_SUPPORTED` bit of `fflags`.
pub const FEATURE_DYN_ROUTING: c_uint = 1 << 0;
/// `CU_FILE_BATCH_IO_SUPPORTED`.
pub const FEATURE_BATCH_IO: c_uint = 1 << 1;
/// `CU_FILE_STREAMS_SUPPORTED`.
pub const FEATURE_STREAMS: c_uint = 1 << 2;
/// `CU_FILE_PARALLEL_IO_SUPPORTED`.
pub const FEATURE_PARALLEL_IO: c_uint = 1 << 3;

/// `CUfileIOParams_t` (64 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CUfileIOParams_t {
    /// `CUfileBatchMode_t` (`CUFILE_BATCH = 1`).
    pub mode: c_int,
    /// `u.batch.devPtr_base`.
    pub dev_ptr_base: *mut c_void,
    /// `u.batch.file_offset`.
    pub file_offset: i64,
    /// `u.batch.devPtr_offset`.
    pub dev_ptr_offset: i64,
    /// `u.batch.size`.
    pub size: usize,
    /// `CUfileHandle_t`.
    pub fh: *mut c_void,
    /// `CUfileOpcode_t` (`CUFILE_READ = 0`, `CUFILE_WRITE = 1`).
    pub opcode: c_int,
    /// Echoed in the event.
    pub cookie: *mut c_void,
}

/// `CUFILE_BATCH`.
pub const BATCH_MODE: c_int = 1;

/// `CUfileIOEvents_t` (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CUfileIOEvents_t {
    /// The entry's cookie.
    pub cookie: *mut c_void,
    /// `CUfileStatus_t`.
    pub status: c_int,
    /// Bytes, or a negative error, as `size_t`.
    pub ret: usize,
}

/// `CUfileStatus_t` values.
pub mod status {
    #![allow(missing_docs)]
    pub const WAITING: i32 = 0x1;
    pub const PENDING: i32 = 0x2;
    pub const INVALID: i32 = 0x4;
    pub const CANCELED: i32 = 0x8;
    pub const COMPLETE: i32 = 0x10;
    pub const TIMEOUT: i32 = 0x20;
    pub const FAILED: i32 = 0x40;
}

/// `CUfileOpCounter_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CUfileOpCounter_t {
    /// Successes.
    pub ok: u64,
    /// Failures.
    pub err: u64,
}

/// `CUfileStatsLevel1_t` (512 bytes in 1.15).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
#[allow(missing_docs)]
pub struct CUfileStatsLevel1_t {
    pub read_ops: CUfileOpCounter_t,
    pub write_ops: CUfileOpCounter_t,
    pub hdl_register_ops: CUfileOpCounter_t,
    pub hdl_deregister_ops: CUfileOpCounter_t,
    pub buf_register_ops: CUfileOpCounter_t,
    pub buf_deregister_ops: CUfileOpCounter_t,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_bw_bytes_per_sec: u64,
    pub write_bw_bytes_per_sec: u64,
    pub read_lat_avg_us: u64,
    pub write_lat_avg_us: u64,
    pub read_ops_per_sec: u64,
    pub write_ops_per_sec: u64,
    pub read_lat_sum_us: u64,
    pub write_lat_sum_us: u64,
    pub batch_submit_ops: CUfileOpCounter_t,
    pub batch_complete_ops: CUfileOpCounter_t,
    pub batch_setup_ops: CUfileOpCounter_t,
    pub batch_cancel_ops: CUfileOpCounter_t,
    pub batch_destroy_ops: CUfileOpCounter_t,
    pub batch_enqueued_ops: CUfileOpCounter_t,
    pub batch_posix_enqueued_ops: CUfileOpCounter_t,
    pub batch_processed_ops: CUfileOpCounter_t,
    pub batch_posix_processed_ops: CUfileOpCounter_t,
    pub batch_nvfs_submit_ops: CUfileOpCounter_t,
    pub batch_p2p_submit_ops: CUfileOpCounter_t,
    pub batch_aio_submit_ops: CUfileOpCounter_t,
    pub batch_iouring_submit_ops: CUfileOpCounter_t,
    pub batch_mixed_io_submit_ops: CUfileOpCounter_t,
    pub batch_total_submit_ops: CUfileOpCounter_t,
    pub batch_read_bytes: u64,
    pub batch_write_bytes: u64,
    pub batch_read_bw_bytes: u64,
    pub batch_write_bw_bytes: u64,
    pub batch_submit_lat_avg_us: u64,
    pub batch_completion_lat_avg_us: u64,
    pub batch_submit_ops_per_sec: u64,
    pub batch_complete_ops_per_sec: u64,
    pub batch_submit_lat_sum_us: u64,
    pub batch_completion_lat_sum_us: u64,
    pub last_batch_read_bytes: u64,
    pub last_batch_write_bytes: u64,
}

/// `CUfileStatsLevel2_t` (1024 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)]
pub struct CUfileStatsLevel2_t {
    pub basic: CUfileStatsLevel1_t,
    pub read_size_kb_hist: [u64; 32],
    pub write_size_kb_hist: [u64; 32],
}

/// `CUfilePerGpuStats_t` (248 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
#[allow(missing_docs)]
pub struct CUfilePerGpuStats_t {
    pub uuid: [u8; 16],
    pub read_bytes: u64,
    pub read_bw_bytes_per_sec: u64,
    pub read_utilization: u64,
    pub read_duration_us: u64,
    pub n_total_reads: u64,
    pub n_p2p_reads: u64,
    pub n_nvfs_reads: u64,
    pub n_posix_reads: u64,
    pub n_unaligned_reads: u64,
    pub n_dr_reads: u64,
    pub n_sparse_regions: u64,
    pub n_inline_regions: u64,
    pub n_reads_err: u64,
    pub writes_bytes: u64,
    pub write_bw_bytes_per_sec: u64,
    pub write_utilization: u64,
    pub write_duration_us: u64,
    pub n_total_writes: u64,
    pub n_p2p_writes: u64,
    pub n_nvfs_writes: u64,
    pub n_posix_writes: u64,
    pub n_unaligned_writes: u64,
    pub n_dr_writes: u64,
    pub n_writes_err: u64,
    pub n_mmap: u64,
    pub n_mmap_ok: u64,
    pub n_mmap_err: u64,
    pub n_mmap_free: u64,
    pub reg_bytes: u64,
}

/// `CUfileStatsLevel3_t` (5000 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)]
pub struct CUfileStatsLevel3_t {
    pub detailed: CUfileStatsLevel2_t,
    pub num_gpus: u32,
    pub per_gpu_stats: [CUfilePerGpuStats_t; 16],
}

const _: () = {
    assert!(std::mem::size_of::<CUfileError_t>() == 8);
    assert!(std::mem::size_of::<CUfileDescr_t>() == 24);
    assert!(std::mem::size_of::<CUfileDrvProps_t>() == 56);
    assert!(std::mem::size_of::<CUfileIOParams_t>() == 64);
    assert!(std::mem::size_of::<CUfileIOEvents_t>() == 24);
    assert!(std::mem::size_of::<CUfileStatsLevel1_t>() == 512);
    assert!(std::mem::size_of::<CUfileStatsLevel2_t>() == 1024);
    assert!(std::mem::size_of::<CUfilePerGpuStats_t>() == 248);
    assert!(std::mem::size_of::<CUfileStatsLevel3_t>() == 5000);
};
