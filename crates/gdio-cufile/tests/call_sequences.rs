//! Random sequences of cuFile calls against a model: opens and closes, handles registered,
//! deregistered, used after their close or made up, buffers registered and not, reads and
//! writes at random offsets (some past the end, some of zero bytes, some with a negative
//! offset), stream-ordered reads and writes on the null stream (no GPU: they run before the
//! call returns), batches with good and bad entries and made-up batch ids. Every call must return
//! what the model says (bytes, `-1` with `EBADF`, `-code`), never crash, and leave each file
//! exactly as the model has it; proptest shrinks a failing sequence to its shortest.

mod common;

use std::ffi::{c_uint, c_void};
use std::fs::OpenOptions;
use std::ptr::null_mut;

use common::*;
use cufile::abi::{code, status, *};
use cufile::*;
use proptest::prelude::*;

const FILES: usize = 2;
const BUF: usize = 96 * 1024;
const START: usize = 64 * 1024;

/// A handle as a call names it.
#[derive(Debug, Clone)]
enum H {
    /// File `i`'s current registration (or the last one, if deregistered since).
    File(usize),
    /// One of the handles deregistered or closed earlier (by index, modulo).
    Stale(usize),
    /// A number no registration gave.
    MadeUp(u64),
    Null,
}

#[derive(Debug, Clone)]
enum Call {
    Open,
    Close,
    Register(usize),
    Deregister(H),
    BufRegister {
        at: usize,
        len: usize,
    },
    BufDeregister {
        at: usize,
    },
    Read {
        h: H,
        size: usize,
        off: i64,
        at: usize,
    },
    Write {
        h: H,
        size: usize,
        off: i64,
        at: usize,
        seed: u64,
    },
    /// `cuFileReadAsync` (`seed` None) or `cuFileWriteAsync` on the null stream.
    Async {
        h: H,
        size: usize,
        off: i64,
        at: usize,
        seed: Option<u64>,
    },
    Batch {
        h: H,
        reads: Vec<(usize, i64)>,
        write: Option<(usize, i64, u64)>,
    },
    MadeUpBatch(u64),
    /// A batch set up and kept (until `DestroyKept` or the last close).
    KeepBatch,
    DestroyKept(usize),
    /// A batch id destroyed or closed earlier, used again.
    StaleBatch(usize),
}

fn handle() -> impl Strategy<Value = H> {
    prop_oneof![
        6 => (0..FILES).prop_map(H::File),
        2 => any::<usize>().prop_map(H::Stale),
        1 => any::<u64>().prop_map(H::MadeUp),
        1 => Just(H::Null),
    ]
}

fn offset() -> impl Strategy<Value = i64> {
    prop_oneof![10 => 0..(START as i64 + 20_000), 1 => Just(-1i64)]
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        1 => Just(Call::Open),
        1 => Just(Call::Close),
        3 => (0..FILES).prop_map(Call::Register),
        1 => handle().prop_map(Call::Deregister),
        1 => (0..BUF / 2, 1..BUF / 2).prop_map(|(at, len)| Call::BufRegister { at, len }),
        1 => (0..BUF / 2).prop_map(|at| Call::BufDeregister { at }),
        6 => (handle(), 0..20_000usize, offset(), 0..BUF / 2)
            .prop_map(|(h, size, off, at)| Call::Read { h, size, off, at }),
        4 => (handle(), 0..20_000usize, offset(), 0..BUF / 2, any::<u64>())
            .prop_map(|(h, size, off, at, seed)| Call::Write { h, size, off, at, seed }),
        3 => (handle(), 0..20_000usize, offset(), 0..BUF / 2, prop::option::of(any::<u64>()))
            .prop_map(|(h, size, off, at, seed)| Call::Async { h, size, off, at, seed }),
        2 => (
            handle(),
            // Reads below START / 2, the write above it: entries run at once, so a read of
            // the range being written could see part of each.
            prop::collection::vec((0..8_000usize, 0..(START as i64 / 2 - 8_000)), 0..4),
            prop::option::of((1..8_000usize, START as i64 / 2..START as i64 + 9_000, any::<u64>())),
        )
            .prop_map(|(h, reads, write)| Call::Batch { h, reads, write }),
        1 => any::<u64>().prop_map(Call::MadeUpBatch),
        1 => Just(Call::KeepBatch),
        1 => any::<usize>().prop_map(Call::DestroyKept),
        1 => any::<usize>().prop_map(Call::StaleBatch),
    ]
}

/// The model: what the library should hold and answer.
struct Model {
    open: i64,
    live: [Option<CUfileHandle_t>; FILES],
    stale: Vec<CUfileHandle_t>,
    bufs: Vec<usize>,
    data: [Vec<u8>; FILES],
    batches: Vec<CUfileBatchHandle_t>,
    stale_batches: Vec<CUfileBatchHandle_t>,
}

impl Model {
    fn handle(&self, h: &H) -> (CUfileHandle_t, Option<usize>) {
        match *h {
            H::File(i) => match self.live[i] {
                Some(fh) => (fh, Some(i)),
                None => (self.stale.last().copied().unwrap_or(null_mut()), None),
            },
            H::Stale(k) if !self.stale.is_empty() => (self.stale[k % self.stale.len()], None),
            H::Stale(_) | H::Null => (null_mut(), None),
            H::MadeUp(x) => (x as CUfileHandle_t, None),
        }
    }

    /// The driver opens implicitly (count 1) on registration when closed.
    fn implicit_open(&mut self) {
        if self.open == 0 {
            self.open = 1;
        }
    }

    fn closed_all(&mut self) {
        for h in self.live.iter_mut() {
            if let Some(fh) = h.take() {
                self.stale.push(fh);
            }
        }
        self.bufs.clear();
        self.stale_batches.append(&mut self.batches);
    }

    /// The error a batch call on an unknown id gives.
    fn unknown_batch(&self) -> i32 {
        if self.open == 0 {
            code::DRIVER_NOT_INITIALIZED
        } else {
            code::INVALID_VALUE
        }
    }
}

fn run(calls: &[Call]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut model = Model {
        open: 0,
        live: [None; FILES],
        stale: Vec::new(),
        bufs: Vec::new(),
        data: [random_bytes(501, START), random_bytes(502, START)],
        batches: Vec::new(),
        stale_batches: Vec::new(),
    };
    for (i, d) in model.data.iter().enumerate() {
        let p = dir.path().join(format!("f{i}"));
        std::fs::write(&p, d).unwrap();
        files.push((p.clone(), OpenOptions::new().read(true).write(true).open(&p).unwrap()));
    }
    let mut buf = random_bytes(503, BUF);
    let base = buf.as_mut_ptr();
    for (step, c) in calls.iter().enumerate() {
        let ctx = format!("step {step}: {c:?}");
        match c {
            Call::Open => {
                prop_assert_eq!(cuFileDriverOpen().err, 0, "{}", ctx);
                model.open += 1;
            }
            Call::Close => {
                let want = if model.open == 0 { code::DRIVER_NOT_INITIALIZED } else { 0 };
                prop_assert_eq!(cuFileDriverClose_v2().err, want, "{}", ctx);
                if model.open > 0 {
                    model.open -= 1;
                    if model.open == 0 {
                        model.closed_all();
                    }
                }
            }
            Call::Register(i) => {
                let mut fh: CUfileHandle_t = null_mut();
                let mut d = descr(std::os::fd::AsRawFd::as_raw_fd(&files[*i].1));
                let e = cuFileHandleRegister(&mut fh, &mut d).err;
                model.implicit_open();
                if model.live[*i].is_some() {
                    prop_assert_eq!(e, code::HANDLE_ALREADY_REGISTERED, "{}", ctx);
                } else {
                    prop_assert_eq!(e, 0, "{}", ctx);
                    prop_assert!(!model.stale.contains(&fh), "{}: a stale handle reused", ctx);
                    model.live[*i] = Some(fh);
                }
            }
            Call::Deregister(h) => {
                let (fh, file) = model.handle(h);
                cuFileHandleDeregister(fh);
                if let Some(i) = file {
                    model.live[i] = None;
                    model.stale.push(fh);
                }
            }
            Call::BufRegister { at, len } => {
                // SAFETY: `at + len` is inside `buf`.
                let p = unsafe { base.add(*at) } as *const c_void;
                let e = cuFileBufRegister(p, *len, 0).err;
                model.implicit_open();
                if model.bufs.contains(at) {
                    prop_assert_eq!(e, code::MEMORY_ALREADY_REGISTERED, "{}", ctx);
                } else {
                    prop_assert_eq!(e, 0, "{}", ctx);
                    model.bufs.push(*at);
                }
            }
            Call::BufDeregister { at } => {
                // SAFETY: inside `buf`.
                let e = cuFileBufDeregister(unsafe { base.add(*at) } as *const c_void).err;
                let want = if model.open == 0 {
                    code::DRIVER_NOT_INITIALIZED
                } else if model.bufs.contains(at) {
                    0
                } else {
                    code::MEMORY_NOT_REGISTERED
                };
                prop_assert_eq!(e, want, "{}", ctx);
                model.bufs.retain(|b| b != at);
            }
            Call::Read { h, size, off, at } => {
                let (fh, file) = model.handle(h);
                let before = buf.clone();
                // SAFETY: `at + size` is inside `buf`.
                let p = unsafe { base.add(*at) } as *mut c_void;
                let n = cuFileRead(fh, p, *size, *off, 0);
                let err = errno();
                match file {
                    None => {
                        prop_assert_eq!((n, err), (-1, libc::EBADF), "{}", ctx);
                        prop_assert!(buf == before, "{}: a refused read wrote memory", ctx);
                    }
                    Some(_) if *off < 0 => {
                        prop_assert_eq!(n, -(code::INVALID_VALUE as isize), "{}", ctx);
                    }
                    // A read that starts past the end of the file is an error (gdio's rule; at
                    // the end, 0 bytes), and writes nothing.
                    Some(i) if *size > 0 && *off as usize > model.data[i].len() => {
                        prop_assert_eq!((n, err), (-1, libc::EINVAL), "{}", ctx);
                        prop_assert!(buf == before, "{}: a refused read wrote memory", ctx);
                    }
                    Some(i) => {
                        let d = &model.data[i];
                        let from = (*off as usize).min(d.len());
                        let want = (*size).min(d.len() - from);
                        prop_assert_eq!(n, want as isize, "{}", ctx);
                        prop_assert!(buf[*at..*at + want] == d[from..from + want], "{}", ctx);
                    }
                }
            }
            Call::Write { h, size, off, at, seed } => {
                let (fh, file) = model.handle(h);
                let bytes = random_bytes(*seed, *size);
                buf[*at..*at + size].copy_from_slice(&bytes);
                // SAFETY: `at + size` is inside `buf`.
                let p = unsafe { base.add(*at) } as *const c_void;
                let n = cuFileWrite(fh, p, *size, *off, 0);
                let err = errno();
                match file {
                    None => prop_assert_eq!((n, err), (-1, libc::EBADF), "{}", ctx),
                    Some(_) if *off < 0 => {
                        prop_assert_eq!(n, -(code::INVALID_VALUE as isize), "{}", ctx)
                    }
                    Some(_) if *size == 0 => prop_assert_eq!(n, 0, "{}", ctx),
                    Some(i) => {
                        prop_assert_eq!(n, *size as isize, "{}", ctx);
                        let d = &mut model.data[i];
                        let end = *off as usize + size;
                        if d.len() < end {
                            d.resize(end, 0);
                        }
                        d[*off as usize..end].copy_from_slice(&bytes);
                    }
                }
            }
            // On a machine with a GPU the null stream is the GPU's, and the I/O runs when it
            // gets there: not modelled here.
            Call::Async { .. } if std::path::Path::new("/dev/nvidiactl").exists() => {}
            Call::Async { h, size, off, at, seed } => {
                let (fh, file) = model.handle(h);
                let bytes = seed.map(|s| random_bytes(s, *size));
                if let Some(b) = &bytes {
                    buf[*at..*at + size].copy_from_slice(b);
                }
                let before = buf.clone();
                let (mut sz, mut fo, mut bo, mut got) = (*size, *off, 0i64, isize::MIN);
                // SAFETY: `at + size` is inside `buf`.
                let p = unsafe { base.add(*at) } as *mut c_void;
                let e = match seed {
                    None => cuFileReadAsync(fh, p, &mut sz, &mut fo, &mut bo, &mut got, null_mut()),
                    Some(_) => {
                        cuFileWriteAsync(fh, p, &mut sz, &mut fo, &mut bo, &mut got, null_mut())
                    }
                }
                .err;
                let einval = -(libc::EINVAL as isize);
                match file {
                    None => prop_assert_eq!((e, got), (code::INVALID_VALUE, einval), "{}", ctx),
                    Some(_) if *off < 0 => prop_assert_eq!((e, got), (0, einval), "{}", ctx),
                    Some(_) if *size == 0 => prop_assert_eq!((e, got), (0, 0), "{}", ctx),
                    Some(i) if seed.is_none() && *off as usize > model.data[i].len() => {
                        prop_assert_eq!((e, got), (0, einval), "{}", ctx)
                    }
                    Some(i) if seed.is_none() => {
                        let d = &model.data[i];
                        let want = (*size).min(d.len() - *off as usize);
                        prop_assert_eq!((e, got), (0, want as isize), "{}", ctx);
                        let from = *off as usize;
                        prop_assert!(buf[*at..*at + want] == d[from..from + want], "{}", ctx);
                    }
                    Some(i) => {
                        prop_assert_eq!((e, got), (0, *size as isize), "{}", ctx);
                        let d = &mut model.data[i];
                        let end = *off as usize + size;
                        if d.len() < end {
                            d.resize(end, 0);
                        }
                        d[*off as usize..end].copy_from_slice(bytes.as_ref().unwrap());
                    }
                }
                if got < 0 {
                    prop_assert!(buf == before, "{}: a refused I/O wrote memory", ctx);
                }
            }
            Call::Batch { h, reads, write } => {
                let (fh, file) = model.handle(h);
                let mut id: CUfileBatchHandle_t = null_mut();
                let e = cuFileBatchIOSetUp(&mut id, 8).err;
                if model.open == 0 {
                    prop_assert_eq!(e, code::DRIVER_NOT_INITIALIZED, "{}", ctx);
                    continue;
                }
                prop_assert_eq!(e, 0, "{}", ctx);
                prop_assert!(
                    !model.stale_batches.contains(&id),
                    "{}: a stale batch id reused",
                    ctx
                );
                model.stale_batches.push(id);
                // Reads into separate 8 000-byte slots of the upper half, the write from the
                // last slot, so that no two entries touch the same memory.
                let slot = |k: usize| BUF / 2 + k * 8_000;
                let mut io: Vec<CUfileIOParams_t> = Vec::new();
                for (k, (size, off)) in reads.iter().enumerate() {
                    io.push(params(0, fh, base, *off, slot(k) as i64, *size, k));
                }
                if let Some((size, off, seed)) = write {
                    let bytes = random_bytes(*seed, *size);
                    buf[slot(4)..slot(4) + size].copy_from_slice(&bytes);
                    io.push(params(1, fh, base, *off, slot(4) as i64, *size, 9));
                }
                let e = cuFileBatchIOSubmit(id, io.len() as c_uint, io.as_mut_ptr(), 0).err;
                if io.is_empty() || file.is_none() {
                    prop_assert_eq!(e, code::INVALID_VALUE, "{}", ctx);
                    cuFileBatchIODestroy(id);
                    continue;
                }
                prop_assert_eq!(e, 0, "{}", ctx);
                let i = file.unwrap();
                let mut ev =
                    vec![CUfileIOEvents_t { cookie: null_mut(), status: 0, ret: 0 }; io.len()];
                let mut nr = io.len() as c_uint;
                let e = cuFileBatchIOGetStatus(id, nr, &mut nr, ev.as_mut_ptr(), null_mut()).err;
                prop_assert_eq!((e, nr as usize), (0, io.len()), "{}", ctx);
                if let Some((size, off, seed)) = write {
                    let d = &mut model.data[i];
                    let end = *off as usize + size;
                    if d.len() < end {
                        d.resize(end, 0);
                    }
                    d[*off as usize..end].copy_from_slice(&random_bytes(*seed, *size));
                }
                for e in &ev {
                    let k = e.cookie as usize;
                    prop_assert_eq!(e.status, status::COMPLETE, "{}: entry {}", ctx, k);
                    if k == 9 {
                        prop_assert_eq!(e.ret, write.unwrap().0, "{}", ctx);
                        continue;
                    }
                    let (size, off) = reads[k];
                    let d = &model.data[i];
                    prop_assert_eq!(e.ret, size, "{}: entry {}", ctx, k);
                    let got = &buf[slot(k)..slot(k) + size];
                    prop_assert!(
                        got == &d[off as usize..off as usize + size],
                        "{}: entry {}",
                        ctx,
                        k
                    );
                }
                cuFileBatchIODestroy(id);
            }
            Call::KeepBatch => {
                let mut id: CUfileBatchHandle_t = null_mut();
                let e = cuFileBatchIOSetUp(&mut id, 4).err;
                if model.open == 0 {
                    prop_assert_eq!(e, code::DRIVER_NOT_INITIALIZED, "{}", ctx);
                } else {
                    prop_assert_eq!(e, 0, "{}", ctx);
                    let seen = model.stale_batches.contains(&id) || model.batches.contains(&id);
                    prop_assert!(!seen, "{}: a batch id given twice", ctx);
                    model.batches.push(id);
                }
            }
            Call::DestroyKept(k) => {
                if !model.batches.is_empty() {
                    let id = model.batches.remove(k % model.batches.len());
                    cuFileBatchIODestroy(id);
                    model.stale_batches.push(id);
                }
            }
            Call::StaleBatch(k) => {
                let Some(&id) = model.stale_batches.get(k % model.stale_batches.len().max(1))
                else {
                    continue;
                };
                let want = model.unknown_batch();
                prop_assert_eq!(cuFileBatchIOCancel(id).err, want, "{}", ctx);
                let mut nr: c_uint = 1;
                let mut ev = [CUfileIOEvents_t { cookie: null_mut(), status: 0, ret: 0 }];
                let e = cuFileBatchIOGetStatus(id, 0, &mut nr, ev.as_mut_ptr(), null_mut()).err;
                prop_assert_eq!(e, want, "{}", ctx);
                if let Some(fh) = model.live.iter().flatten().next() {
                    let before = buf.clone();
                    let mut io = [params(0, *fh, base, 0, 0, 100, 1)];
                    let e = cuFileBatchIOSubmit(id, 1, io.as_mut_ptr(), 0).err;
                    prop_assert_eq!(e, want, "{}", ctx);
                    prop_assert!(buf == before, "{}: a stale batch read", ctx);
                }
                cuFileBatchIODestroy(id);
            }
            Call::MadeUpBatch(x) => {
                let id = *x as CUfileBatchHandle_t;
                let mut nr: c_uint = 1;
                let mut ev = [CUfileIOEvents_t { cookie: null_mut(), status: 0, ret: 0 }];
                let want = if model.open == 0 {
                    code::DRIVER_NOT_INITIALIZED
                } else {
                    code::INVALID_VALUE
                };
                let e = cuFileBatchIOGetStatus(id, 0, &mut nr, ev.as_mut_ptr(), null_mut()).err;
                prop_assert!(e == want || e == code::INVALID_VALUE, "{}: {}", ctx, e);
                prop_assert_eq!(cuFileBatchIOCancel(id).err, want, "{}", ctx);
                cuFileBatchIODestroy(id);
            }
        }
        prop_assert_eq!(cuFileUseCount(), model.open, "{}: use count", ctx);
    }
    closed();
    for (i, (p, _)) in files.iter().enumerate() {
        prop_assert!(
            std::fs::read(p).unwrap() == model.data[i],
            "file {} differs from the model",
            i
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    #[test]
    fn random_call_sequences_match_the_model(calls in prop::collection::vec(call(), 1..60)) {
        let _g = serial();
        run(&calls)?;
    }
}
