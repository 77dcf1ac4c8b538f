//! How tmpfs keeps a file's page cache: in 4 KiB pages or in huge pages. The mount's `huge=`
//! option decides (no option: `never`), unless `/sys/kernel/mm/transparent_hugepage/
//! shmem_enabled` overrides every mount (`deny`: never, `force`: always).
//!
//! It can matter for reads: the kernel copies out of 4 KiB pages one page at a time. Measured
//! (BENCHMARKS.md session 35): on the build machine one thread's `pread` of 4 MiB chunks ran
//! 9.7–10.5 GB/s out of tmpfs's 4 KiB pages against 17.3–19.9 out of a tmpfs mounted
//! `huge=always` (`bench/pread-rate.c`); on the H200 host eight threads ran 28 GB/s out of
//! tmpfs against 60 out of ext4's page cache (run 4), where session 14's probe had found the
//! two equal (53.5). Where the copy costs more, reads with few requests in flight run out of
//! CPU before the GPU link is full (`gdio bench` 4 MiB × 8: 45 GB/s from tmpfs against 50 from
//! ext4 in that run 4), so `gdio check` and `gdio bench` say how the pages are kept.

use serde::Serialize;

use super::FsInfo;

/// Where the system-wide override lives.
pub const SHMEM_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/shmem_enabled";

/// A tmpfs mount's huge-page policy for its files (tmpfs(5) `huge=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TmpfsHuge {
    /// 4 KiB pages only (the default).
    Never,
    /// A huge page wherever one fits.
    Always,
    /// A huge page where it stays within the file's size.
    WithinSize,
    /// Huge pages only for mappings that ask with `madvise(MADV_HUGEPAGE)`; what `read` and
    /// `write` fill stays in 4 KiB pages.
    Advise,
}

impl TmpfsHuge {
    /// The policy named as in `huge=` and `shmem_enabled`.
    pub fn parse(name: &str) -> Option<TmpfsHuge> {
        match name {
            "never" => Some(TmpfsHuge::Never),
            "always" => Some(TmpfsHuge::Always),
            "within_size" => Some(TmpfsHuge::WithinSize),
            "advise" => Some(TmpfsHuge::Advise),
            _ => None,
        }
    }

    /// The name `huge=` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            TmpfsHuge::Never => "never",
            TmpfsHuge::Always => "always",
            TmpfsHuge::WithinSize => "within_size",
            TmpfsHuge::Advise => "advise",
        }
    }
}

/// What set a tmpfs file's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The mount's `huge=` option.
    MountOption,
    /// No `huge=` on the mount: `never`.
    MountDefault,
    /// `shmem_enabled` says `deny` or `force`, which override every mount.
    SystemOverride,
}

/// How a tmpfs file's page cache is kept, and what that means for reading it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TmpfsPages {
    /// The policy in effect.
    pub policy: TmpfsHuge,
    /// Where it came from.
    pub decided_by: DecidedBy,
}

impl TmpfsPages {
    /// The pages of files on `fs` given the text of [`SHMEM_ENABLED`] (`None` where it could
    /// not be read); `None` for a filesystem other than tmpfs.
    pub fn of(fs: &FsInfo, shmem_enabled: Option<&str>) -> Option<TmpfsPages> {
        if fs.name != "tmpfs" {
            return None;
        }
        let system = shmem_enabled.and_then(crate::platform::sysfs_choice);
        let forced = match system {
            Some("deny") => Some(TmpfsHuge::Never),
            Some("force") => Some(TmpfsHuge::Always),
            _ => None,
        };
        if let Some(policy) = forced {
            return Some(TmpfsPages { policy, decided_by: DecidedBy::SystemOverride });
        }
        let option = fs
            .super_options
            .iter()
            .chain(&fs.mount_options)
            .find_map(|o| o.strip_prefix("huge="))
            .and_then(TmpfsHuge::parse);
        Some(match option {
            Some(policy) => TmpfsPages { policy, decided_by: DecidedBy::MountOption },
            None => TmpfsPages { policy: TmpfsHuge::Never, decided_by: DecidedBy::MountDefault },
        })
    }

    /// [`TmpfsPages::of`] with this system's [`SHMEM_ENABLED`].
    pub fn probe(fs: &FsInfo) -> Option<TmpfsPages> {
        let text = std::fs::read_to_string(SHMEM_ENABLED).ok();
        TmpfsPages::of(fs, text.as_deref())
    }

    /// True when what `read` and `write` put in the page cache stays in 4 KiB pages.
    pub fn small_pages(&self) -> bool {
        matches!(self.policy, TmpfsHuge::Never | TmpfsHuge::Advise)
    }

    /// One line for a user: the pages, why, and, for 4 KiB pages, what reading costs and how
    /// to change it.
    pub fn describe(&self) -> String {
        let why = match self.decided_by {
            DecidedBy::MountOption => format!("huge={}", self.policy.as_str()),
            DecidedBy::MountDefault => "no huge= option on the mount".to_owned(),
            DecidedBy::SystemOverride => format!(
                "{SHMEM_ENABLED} forces {} on every mount",
                if self.policy == TmpfsHuge::Never { "4 KiB pages" } else { "huge pages" }
            ),
        };
        if !self.small_pages() {
            return format!("huge pages ({why})");
        }
        let fix = if self.decided_by == DecidedBy::SystemOverride {
            "set shmem_enabled to something other than deny"
        } else {
            "mount with huge=within_size (or huge=always)"
        };
        format!(
            "4 KiB pages ({why}): the kernel's copy out of them can cost the CPU up to twice \
             a copy out of huge pages, and reads with few requests in flight then run out of \
             CPU before the GPU link is full; {fix} and write the file again (pages already in \
             the file keep their size)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(name: &str, opts: &[&str]) -> FsInfo {
        FsInfo {
            magic: 0,
            name: name.to_owned(),
            mount_point: None,
            source: None,
            mount_options: vec!["rw".into(), "relatime".into()],
            super_options: opts.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    const SHMEM: &str = "always within_size advise [never] deny force\n";

    #[test]
    fn the_mount_option_decides_unless_the_system_overrides() {
        let cases = [
            (&["rw", "size=1g"][..], SHMEM, TmpfsHuge::Never, DecidedBy::MountDefault),
            (&["rw", "huge=always"][..], SHMEM, TmpfsHuge::Always, DecidedBy::MountOption),
            (&["huge=within_size"][..], SHMEM, TmpfsHuge::WithinSize, DecidedBy::MountOption),
            (&["huge=advise"][..], SHMEM, TmpfsHuge::Advise, DecidedBy::MountOption),
            (
                &["huge=always"][..],
                "always [deny] force",
                TmpfsHuge::Never,
                DecidedBy::SystemOverride,
            ),
            (&["rw"][..], "never deny [force]", TmpfsHuge::Always, DecidedBy::SystemOverride),
            // `within_size` chosen system-wide applies to the internal shm mount, not to tmpfs.
            (&["rw"][..], "[within_size] deny", TmpfsHuge::Never, DecidedBy::MountDefault),
        ];
        for (opts, shmem, policy, by) in cases {
            let got = TmpfsPages::of(&fs("tmpfs", opts), Some(shmem)).unwrap();
            assert_eq!((got.policy, got.decided_by), (policy, by), "{opts:?} {shmem}");
        }
        let unread = TmpfsPages::of(&fs("tmpfs", &["huge=always"]), None).unwrap();
        assert_eq!(unread.policy, TmpfsHuge::Always);
        let garbage = TmpfsPages::of(&fs("tmpfs", &["huge=sometimes"]), Some(SHMEM)).unwrap();
        assert_eq!(garbage.decided_by, DecidedBy::MountDefault, "an unknown value is not a policy");
    }

    #[test]
    fn only_tmpfs_has_tmpfs_pages() {
        for name in ["ext4", "xfs", "ramfs", "devtmpfs"] {
            assert_eq!(TmpfsPages::of(&fs(name, &["huge=always"]), Some(SHMEM)), None, "{name}");
        }
    }

    #[test]
    fn small_pages_get_the_cost_and_the_way_out() {
        let small = TmpfsPages::of(&fs("tmpfs", &[]), Some(SHMEM)).unwrap();
        assert!(small.small_pages());
        let d = small.describe();
        assert!(d.starts_with("4 KiB pages (no huge= option"), "{d}");
        assert!(d.contains("huge=within_size") && d.contains("write the file again"), "{d}");
        let advise = TmpfsPages::of(&fs("tmpfs", &["huge=advise"]), Some(SHMEM)).unwrap();
        assert!(advise.small_pages() && advise.describe().contains("huge=advise"));
        let denied = TmpfsPages::of(&fs("tmpfs", &["huge=always"]), Some("[deny]")).unwrap();
        assert!(denied.describe().contains("other than deny"), "{}", denied.describe());
        let huge = TmpfsPages::of(&fs("tmpfs", &["huge=within_size"]), Some(SHMEM)).unwrap();
        assert!(!huge.small_pages());
        assert_eq!(huge.describe(), "huge pages (huge=within_size)");
    }

    #[test]
    fn dev_shm_reports_what_its_mount_says() {
        let Ok(file) = tempfile::NamedTempFile::new_in("/dev/shm") else {
            return; // no /dev/shm in this sandbox: nothing to compare
        };
        let info = crate::file::probe_path(file.path()).expect("probe a file in /dev/shm");
        if info.fs.name != "tmpfs" {
            return;
        }
        let pages = TmpfsPages::probe(&info.fs).expect("tmpfs has tmpfs pages");
        let forced = std::fs::read_to_string(SHMEM_ENABLED)
            .ok()
            .and_then(|t| crate::platform::sysfs_choice(&t).map(str::to_owned))
            .filter(|c| c == "deny" || c == "force");
        let option = info.fs.super_options.iter().find_map(|o| o.strip_prefix("huge="));
        match (forced.as_deref(), option) {
            (Some(_), _) => assert_eq!(pages.decided_by, DecidedBy::SystemOverride),
            (None, Some(o)) => assert_eq!(pages.policy.as_str(), o),
            (None, None) => assert_eq!(pages.policy, TmpfsHuge::Never),
        }
    }
}
