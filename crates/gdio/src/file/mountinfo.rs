//! The mount a file lives on, from `/proc/self/mountinfo`.

use std::path::{Path, PathBuf};

/// One line of `/proc/self/mountinfo`, the fields gdio uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// `major:minor` of the filesystem's device.
    pub dev: (u32, u32),
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Per-mount options (`rw`, `noatime`, ...).
    pub mount_options: Vec<String>,
    /// Filesystem type as the kernel names it (`ext4`, `xfs`, `tmpfs`, ...).
    pub fs_type: String,
    /// The mount source (`/dev/vda1`, `tmpfs`, ...).
    pub source: String,
    /// Per-superblock options (`data=ordered`, `errors=remount-ro`, ...).
    pub super_options: Vec<String>,
}

impl MountEntry {
    /// The value of `key=value` in the superblock or mount options.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.super_options.iter().chain(self.mount_options.iter()).find_map(|o| {
            let (k, v) = o.split_once('=')?;
            (k == key).then_some(v)
        })
    }
}

/// Undoes the octal escapes (`\040` for a space) mountinfo uses in paths.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() {
            let oct = &field[i + 1..(i + 4).min(field.len())];
            if oct.len() == 3 {
                if let Ok(v) = u8::from_str_radix(oct, 8) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses one mountinfo line; `None` for a line that does not have the documented shape.
pub fn parse_line(line: &str) -> Option<MountEntry> {
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split(' ').collect();
    if l.len() < 6 {
        return None;
    }
    let (maj, min) = l[2].split_once(':')?;
    let r: Vec<&str> = right.splitn(3, ' ').collect();
    if r.len() < 3 {
        return None;
    }
    Some(MountEntry {
        dev: (maj.parse().ok()?, min.parse().ok()?),
        mount_point: PathBuf::from(unescape(l[4])),
        mount_options: l[5].split(',').map(str::to_owned).collect(),
        fs_type: r[0].to_owned(),
        source: unescape(r[1]),
        super_options: r[2].trim_end().split(',').map(str::to_owned).collect(),
    })
}

/// Parses the whole of a mountinfo file.
pub fn parse(text: &str) -> Vec<MountEntry> {
    text.lines().filter_map(parse_line).collect()
}

/// The mount that holds `path` (already canonical) on device `dev`: the entry with that device
/// whose mount point is the longest prefix of the path; failing that, the first entry with that
/// device (a path that names no mount of it, such as `/proc/self/fd/N` of an unlinked file: the
/// mounts of one device share their superblock options); failing that (a filesystem whose
/// files report another device than its mount, as btrfs subvolumes do), the longest prefix.
pub fn find<'a>(entries: &'a [MountEntry], path: &Path, dev: (u32, u32)) -> Option<&'a MountEntry> {
    let by_prefix = |e: &&MountEntry| path.starts_with(&e.mount_point);
    let longest = |e: &&MountEntry| e.mount_point.as_os_str().len();
    let on_dev = || entries.iter().filter(|e| e.dev == dev);
    on_dev()
        .filter(by_prefix)
        .max_by_key(longest)
        .or_else(|| on_dev().next())
        .or_else(|| entries.iter().filter(by_prefix).max_by_key(longest))
}

/// Reads `/proc/self/mountinfo` and finds the mount of `path`.
pub fn lookup(path: &Path, dev: (u32, u32)) -> Option<MountEntry> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let entries = parse(&text);
    find(&entries, path, dev).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro
30 22 0:26 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,size=24684092k
41 22 259:2 / /mnt/my\\040data rw,noatime shared:9 - xfs /dev/nvme0n1p2 rw,attr2,inode64,logbufs=8
42 22 252:3 / /data rw,relatime - ext4 /dev/vdb rw,data=writeback
";

    #[test]
    fn parses_fields_and_escapes() {
        let e = parse(SAMPLE);
        assert_eq!(e.len(), 4);
        assert_eq!(e[0].dev, (252, 1));
        assert_eq!(e[0].fs_type, "ext4");
        assert_eq!(e[0].option("errors"), Some("remount-ro"));
        assert_eq!(e[2].mount_point, PathBuf::from("/mnt/my data"));
        assert_eq!(e[2].mount_options, vec!["rw", "noatime"]);
        assert_eq!(e[3].option("data"), Some("writeback"));
    }

    #[test]
    fn finds_longest_prefix_on_device() {
        let e = parse(SAMPLE);
        assert_eq!(find(&e, Path::new("/dev/shm/x"), (0, 26)).unwrap().fs_type, "tmpfs");
        assert_eq!(
            find(&e, Path::new("/data/a/b"), (252, 3)).unwrap().option("data"),
            Some("writeback")
        );
        assert_eq!(
            find(&e, Path::new("/home/u/f"), (252, 1)).unwrap().mount_point,
            PathBuf::from("/")
        );
        // Unknown device: falls back to the longest prefix.
        assert_eq!(find(&e, Path::new("/mnt/my data/f"), (9, 9)).unwrap().fs_type, "xfs");
        // A path under no mount of its device (an unlinked file's /proc/self/fd link): the
        // device decides, not the /proc prefix.
        let with_proc = format!("{SAMPLE}50 22 0:5 / /proc rw - proc proc rw\n");
        let e = parse(&with_proc);
        let m = find(&e, Path::new("/proc/self/fd/7"), (0, 26)).unwrap();
        assert_eq!((m.fs_type.as_str(), m.mount_point.as_path()), ("tmpfs", Path::new("/dev/shm")));
        assert_eq!(find(&e, Path::new("/proc/self/fd/7"), (9, 9)).unwrap().fs_type, "proc");
    }

    #[test]
    fn malformed_lines_are_skipped() {
        assert!(parse_line("garbage").is_none());
        assert!(parse_line("1 2 x / / rw - ext4 /dev/a rw").is_none());
    }
}
