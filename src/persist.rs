//! Atomic, durable replacement of a file: write a temporary file beside it, fsync, rename over
//! the target, fsync the directory.

use crate::error::{Error, Result};
use crate::format::{self, FileOut};
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// A filter that is written as one file: the single filter and the chain. Each says what its
/// file holds ([`with_file`](Self::with_file)); the bytes, the writer and the atomic save are
/// made here, once, for both.
pub(crate) trait Persisted {
    /// Calls `f` with the file's contents: header fields and every level's region.
    fn with_file<R>(&self, f: impl FnOnce(&FileOut<'_>) -> R) -> R;

    /// The file's bytes (`to_bytes`).
    fn file_bytes(&self) -> Vec<u8> {
        self.with_file(format::to_bytes)
    }

    /// Writes the file's bytes to `w` (`write_to`).
    fn write_file(&self, w: &mut dyn Write) -> Result<()> {
        self.with_file(|file| format::write(file, w))?;
        Ok(())
    }

    /// Saves the file to `path` by [`save_atomic`] (`save`).
    fn save_file(&self, path: &Path) -> Result<()> {
        save_atomic(path, |w| self.with_file(|file| format::write(file, w)))
    }
}

/// Writes the bytes produced by `write` to `path` so that a crash at any moment leaves either
/// the old file or the complete new one at `path`, never a torn one.
///
/// The data goes to a temporary file in the same directory (so the rename stays within one
/// file system), which is flushed and fsynced, then renamed over `path`; finally the directory
/// is fsynced so that the rename itself is durable. An error in `write`, in a flush, in an
/// fsync of the file or in the rename returns before `path` changes, and the temporary file is
/// removed. A failed fsync of the directory comes after the rename: it returns
/// [`Error::NotDurable`], and `path` holds the new file.
///
/// On Unix the file gets the permissions a user expects of a file written in place: those of
/// the file it replaces, or for a new file `0o666` less the process's umask (`0o644` under
/// the usual `022`), as `File::create` gives. (The temporary file is created with those
/// permissions, or first with the new-file ones and then set to the old file's, before any byte
/// is written.) The owner is the saving process's user, whoever owned the old file. Elsewhere
/// the file gets the platform's defaults for a new file.
pub(crate) fn save_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    save_atomic_with(&RealFs, path, write)
}

/// The file-system operations of [`save_atomic`], in the order it makes them: the seam through
/// which tests record them, replay crashes at every point and inject faults.
pub(crate) trait Fs {
    /// An open, new, empty temporary file.
    type Temp: Write;
    /// Creates a temporary file in `dir` whose name starts with `prefix` and ends in `.tmp`,
    /// with the permissions the file saved at `target` is to have (see [`save_atomic`]).
    fn create_temp(&self, dir: &Path, prefix: &str, target: &Path) -> io::Result<Self::Temp>;
    /// Makes the temporary file's bytes durable (`fsync`).
    fn sync(&self, tmp: &mut Self::Temp) -> io::Result<()>;
    /// Renames the temporary file over `path`; on failure the temporary file is removed.
    fn persist(&self, tmp: Self::Temp, path: &Path) -> io::Result<()>;
    /// Removes a temporary file that will not be renamed.
    fn discard(&self, tmp: Self::Temp);
    /// Makes the renames in `dir` durable (`fsync` of the directory).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// [`save_atomic`] over any [`Fs`]: create the temporary file, write it through a 1 MiB buffer,
/// fsync it, rename it over `path`, fsync the directory.
pub(crate) fn save_atomic_with<F: Fs>(
    fs: &F,
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path to save to has no file name",
        )
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = fs.create_temp(dir, &format!(".{}.", name.to_string_lossy()), path)?;
    if let Err(e) = fill(fs, &mut tmp, write) {
        fs.discard(tmp);
        return Err(e.into());
    }
    fs.persist(tmp, path)?;
    fs.sync_dir(dir).map_err(Error::NotDurable)?;
    Ok(())
}

/// Writes and fsyncs the temporary file.
fn fill<F: Fs>(
    fs: &F,
    tmp: &mut F::Temp,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, &mut *tmp);
    write(&mut w)?;
    w.into_inner().map_err(|e| e.into_error())?;
    fs.sync(tmp)
}

/// The operating system's file system.
struct RealFs;

/// A temporary file of [`RealFs`], removed when dropped unless renamed. Writes go straight to
/// the file; they come from `fill`'s `BufWriter`, which calls `write` only (the file's bytes
/// are written with `write_all`), so no vectored write is forwarded.
struct RealTemp(tempfile::NamedTempFile);

impl Write for RealTemp {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.as_file_mut().write(buf)
    }

    #[inline]
    fn flush(&mut self) -> io::Result<()> {
        self.0.as_file_mut().flush()
    }
}

impl Fs for RealFs {
    type Temp = RealTemp;

    fn create_temp(&self, dir: &Path, prefix: &str, target: &Path) -> io::Result<RealTemp> {
        let mut builder = tempfile::Builder::new();
        builder.prefix(prefix).suffix(".tmp");
        // `open(2)` takes the umask off the mode it is given: 0o666 becomes what
        // `File::create` gives a new file. (tempfile's own default is 0o600.)
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder
            .tempfile_in(dir)
            .map_err(|e| about_target(e, target))?;
        // A file being replaced keeps its mode: set on the open file, which the umask does
        // not touch, as `std::fs::copy` does.
        #[cfg(unix)]
        if let Ok(old) = std::fs::metadata(target)
            && old.is_file()
        {
            tmp.as_file().set_permissions(old.permissions())?;
        }
        Ok(RealTemp(tmp))
    }

    fn sync(&self, tmp: &mut RealTemp) -> io::Result<()> {
        tmp.0.as_file().sync_all()
    }

    fn persist(&self, tmp: RealTemp, path: &Path) -> io::Result<()> {
        // On failure the `NamedTempFile` comes back inside the error and is dropped: removed.
        tmp.0.persist(path).map(drop).map_err(|e| e.error)
    }

    fn discard(&self, tmp: RealTemp) {
        drop(tmp); // `NamedTempFile` removes its file when dropped
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        sync_dir(dir)
    }
}

/// `e`, the error of creating the temporary file for `target`, as an error about `target`:
/// tempfile's message ends in ` at path "<the temporary file>"`, a name the caller never gave
/// and that does not exist (`/nonexistent/.x.aZlbC7.tmp` for `/nonexistent/x`). The kind is
/// kept.
fn about_target(e: io::Error, target: &Path) -> io::Error {
    let text = e.to_string();
    let cause = text
        .split_once(" at path ")
        .map_or(&text[..], |(cause, _)| cause);
    io::Error::new(
        e.kind(),
        format!("cannot save {}: {cause}", target.display()),
    )
}

/// Makes a rename in `dir` durable.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Windows cannot open directories as files; its renames are made durable by the file system.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        save_atomic(&path, |w| w.write_all(b"one")).unwrap();
        save_atomic(&path, |w| w.write_all(b"two!")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two!");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn a_failed_write_never_renames() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        save_atomic(&path, |w| w.write_all(b"old")).unwrap();
        let err = save_atomic(&path, |w| {
            w.write_all(&[7u8; 3 << 20])?; // more than the buffer: partly written to disk
            Err(io::Error::other("disk on fire"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("disk on fire"));
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert!(leftovers(dir.path()).is_empty());
    }

    /// The error names the path asked for, not the temporary file that could not be made.
    #[test]
    fn a_missing_directory_is_an_io_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/f.bin");
        match save_atomic(&path, |w| w.write_all(b"x")) {
            Err(crate::Error::Io(e)) => {
                assert_eq!(e.kind(), io::ErrorKind::NotFound);
                let shown = e.to_string();
                assert!(
                    shown.starts_with(&format!("cannot save {}: ", path.display())),
                    "{shown}"
                );
                // The temporary file would be `.f.bin.XXXXXX.tmp`.
                assert!(!shown.contains(".f.bin."), "{shown}");
                assert!(!shown.contains("at path"), "{shown}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// The mode of a file in `dir` created with mode 0o666: 0o666 less the process's umask,
    /// as `File::create` and `save` give a new file.
    #[cfg(unix)]
    fn new_file_mode(dir: &Path) -> u32 {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let probe = dir.join("umask-probe");
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(&probe)
            .unwrap();
        let mode = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o7777;
        std::fs::remove_file(&probe).unwrap();
        mode
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// A new file gets the mode of any file the process creates: 0o666 less its umask (0o644
    /// under 022; `cli/tests/cli.rs` saves under set umasks in a child process), not the
    /// temporary file's 0o600.
    #[cfg(unix)]
    #[test]
    fn a_new_file_gets_0666_less_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let expected = new_file_mode(dir.path());
        assert_eq!(expected & !0o666, 0, "{expected:o}");
        let path = dir.path().join("new.bin");
        save_atomic(&path, |w| w.write_all(b"new")).unwrap();
        assert_eq!(mode(&path), expected, "{:o} != {expected:o}", mode(&path));
    }

    /// A replaced file keeps its mode, whatever the umask would give a new one; read-only
    /// files included (the rename needs only the directory to be writable).
    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.bin");
        for old_mode in [0o640, 0o604, 0o666, 0o600, 0o444, 0o755] {
            save_atomic(&path, |w| w.write_all(b"old")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(old_mode)).unwrap();
            save_atomic(&path, |w| w.write_all(b"new")).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"new");
            assert_eq!(mode(&path), old_mode, "{:o} != {old_mode:o}", mode(&path));
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn a_bare_file_name_saves_in_the_current_directory() {
        let name = format!("cuckoo-sst-test-{}.bin", std::process::id());
        save_atomic(Path::new(&name), |w| w.write_all(b"here")).unwrap();
        assert_eq!(std::fs::read(&name).unwrap(), b"here");
        std::fs::remove_file(&name).unwrap();
    }
}

/// A simulated file system that records the operations of a save, replays a crash after every
/// prefix of them (unsynced writes dropped, torn or reordered; unsynced renames kept or lost),
/// and injects faults.
#[cfg(test)]
mod power_loss {
    use super::*;
    use crate::{Config, CuckooFilter};
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::path::PathBuf;
    use std::rc::Rc;

    type Ino = usize;

    /// One recorded file-system operation.
    #[derive(Clone, Debug)]
    enum Op {
        Create {
            name: PathBuf,
            ino: Ino,
        },
        Write {
            ino: Ino,
            at: usize,
            data: Vec<u8>,
        },
        Sync {
            ino: Ino,
        },
        Rename {
            from: PathBuf,
            to: PathBuf,
            ino: Ino,
        },
        Remove {
            name: PathBuf,
        },
        SyncDir,
    }

    /// What the simulated disk does wrong.
    #[derive(Clone, Copy, Default)]
    struct Faults {
        /// Writes accept at most this many bytes per call (0: no limit), so that a save makes
        /// several writes and a crash can fall between them.
        max_write: usize,
        /// Bytes the disk can still take; past them writes fail with `StorageFull`.
        space: Option<usize>,
        fail_sync: bool,
        fail_rename: bool,
        fail_sync_dir: bool,
        /// A broken writer for the tests of the test: `sync` succeeds without syncing.
        skip_sync: bool,
        /// Likewise for the directory.
        skip_sync_dir: bool,
    }

    /// The live state: names, every inode's current bytes, and the log of operations.
    #[derive(Default)]
    struct State {
        names: BTreeMap<PathBuf, Ino>,
        files: Vec<Vec<u8>>,
        log: Vec<Op>,
        faults: Faults,
    }

    #[derive(Clone, Default)]
    struct SimFs(Rc<RefCell<State>>);

    struct SimFile {
        fs: SimFs,
        ino: Ino,
        name: PathBuf,
        pos: usize,
    }

    /// `data` written at `at` into `bytes` (zero-filling a gap).
    fn apply(bytes: &mut Vec<u8>, at: usize, data: &[u8]) {
        if bytes.len() < at + data.len() {
            bytes.resize(at + data.len(), 0);
        }
        bytes[at..at + data.len()].copy_from_slice(data);
    }

    impl Write for SimFile {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let mut s = self.fs.0.borrow_mut();
            let mut n = buf.len();
            if s.faults.max_write != 0 {
                n = n.min(s.faults.max_write);
            }
            if let Some(space) = s.faults.space {
                if space == 0 && n > 0 {
                    return Err(io::ErrorKind::StorageFull.into());
                }
                n = n.min(space);
                s.faults.space = Some(space - n);
            }
            let data = buf[..n].to_vec();
            apply(&mut s.files[self.ino], self.pos, &data);
            s.log.push(Op::Write {
                ino: self.ino,
                at: self.pos,
                data,
            });
            self.pos += n;
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Fs for SimFs {
        type Temp = SimFile;

        fn create_temp(&self, dir: &Path, prefix: &str, _target: &Path) -> io::Result<SimFile> {
            let mut s = self.0.borrow_mut();
            let ino = s.files.len();
            let name = dir.join(format!("{prefix}{ino}.tmp"));
            s.files.push(Vec::new());
            s.names.insert(name.clone(), ino);
            s.log.push(Op::Create {
                name: name.clone(),
                ino,
            });
            Ok(SimFile {
                fs: self.clone(),
                ino,
                name,
                pos: 0,
            })
        }

        fn sync(&self, tmp: &mut SimFile) -> io::Result<()> {
            let mut s = self.0.borrow_mut();
            if s.faults.fail_sync {
                return Err(io::Error::other("injected fsync failure"));
            }
            if !s.faults.skip_sync {
                s.log.push(Op::Sync { ino: tmp.ino });
            }
            Ok(())
        }

        fn persist(&self, tmp: SimFile, path: &Path) -> io::Result<()> {
            if self.0.borrow().faults.fail_rename {
                self.discard(tmp);
                return Err(io::Error::other("injected rename failure"));
            }
            let mut s = self.0.borrow_mut();
            s.names.remove(&tmp.name);
            s.names.insert(path.to_path_buf(), tmp.ino);
            s.log.push(Op::Rename {
                from: tmp.name,
                to: path.to_path_buf(),
                ino: tmp.ino,
            });
            Ok(())
        }

        fn discard(&self, tmp: SimFile) {
            let mut s = self.0.borrow_mut();
            s.names.remove(&tmp.name);
            s.log.push(Op::Remove { name: tmp.name });
        }

        fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
            let mut s = self.0.borrow_mut();
            if s.faults.fail_sync_dir {
                return Err(io::Error::other("injected directory fsync failure"));
            }
            if !s.faults.skip_sync_dir {
                s.log.push(Op::SyncDir);
            }
            Ok(())
        }
    }

    impl SimFs {
        /// A disk on which `path` durably holds `old`.
        fn with_file(path: &Path, old: &[u8], faults: Faults) -> SimFs {
            let fs = SimFs::default();
            {
                let mut s = fs.0.borrow_mut();
                s.files.push(old.to_vec());
                s.names.insert(path.to_path_buf(), 0);
                s.faults = faults;
            }
            fs
        }

        fn log(&self) -> Vec<Op> {
            self.0.borrow().log.clone()
        }

        /// The names and bytes a reader sees now (no crash).
        fn live(&self) -> BTreeMap<PathBuf, Vec<u8>> {
            let s = self.0.borrow();
            s.names
                .iter()
                .map(|(n, &ino)| (n.clone(), s.files[ino].clone()))
                .collect()
        }
    }

    /// A namespace change not yet made durable by a directory fsync.
    #[derive(Clone, Debug)]
    enum NsOp {
        Link(PathBuf, Ino),
        Rename(PathBuf, PathBuf, Ino),
        Unlink(PathBuf),
    }

    /// The durable state after the operations `log` from a disk on which `path` held inode 0
    /// (`old`), durably: durable names and bytes, and what is still pending.
    struct Replay {
        names: BTreeMap<PathBuf, Ino>,
        pending_ns: Vec<NsOp>,
        durable: BTreeMap<Ino, Vec<u8>>,
        pending: BTreeMap<Ino, Vec<(usize, Vec<u8>)>>,
    }

    impl Replay {
        fn new(path: &Path, old: &[u8], log: &[Op]) -> Replay {
            let mut r = Replay {
                names: BTreeMap::from([(path.to_path_buf(), 0)]),
                pending_ns: Vec::new(),
                durable: BTreeMap::from([(0, old.to_vec())]),
                pending: BTreeMap::new(),
            };
            for op in log {
                match op.clone() {
                    Op::Create { name, ino } => {
                        r.durable.insert(ino, Vec::new());
                        r.pending_ns.push(NsOp::Link(name, ino));
                    }
                    Op::Write { ino, at, data } => {
                        r.pending.entry(ino).or_default().push((at, data));
                    }
                    Op::Sync { ino } => {
                        let bytes = r.durable.get_mut(&ino).unwrap();
                        for (at, data) in r.pending.remove(&ino).unwrap_or_default() {
                            apply(bytes, at, &data);
                        }
                    }
                    Op::Rename { from, to, ino } => r.pending_ns.push(NsOp::Rename(from, to, ino)),
                    Op::Remove { name } => r.pending_ns.push(NsOp::Unlink(name)),
                    Op::SyncDir => {
                        for op in std::mem::take(&mut r.pending_ns) {
                            apply_ns(&mut r.names, &op);
                        }
                    }
                }
            }
            r
        }

        /// Every namespace a crash may leave: the durable one with any subset of the pending
        /// changes applied, in order (a journal may commit some and not others).
        fn namespaces(&self) -> Vec<BTreeMap<PathBuf, Ino>> {
            let k = self.pending_ns.len();
            assert!(k <= 8, "{k} pending namespace changes");
            (0..1u32 << k)
                .map(|subset| {
                    let mut names = self.names.clone();
                    for (i, op) in self.pending_ns.iter().enumerate() {
                        if subset >> i & 1 == 1 {
                            apply_ns(&mut names, op);
                        }
                    }
                    names
                })
                .collect()
        }

        /// Every content inode `ino` may have after a crash: its durable bytes plus the first
        /// `j` pending writes and a torn prefix of the next (every `j`, every prefix length),
        /// and plus any subset of the pending writes, whole (pages reach the disk in any order).
        fn contents(&self, ino: Ino) -> Vec<Vec<u8>> {
            let base = &self.durable[&ino];
            let pending: &[(usize, Vec<u8>)] = self.pending.get(&ino).map_or(&[], |p| p);
            let mut out = Vec::new();
            let mut prefix = base.clone();
            for (at, data) in pending {
                for torn in 0..data.len() {
                    let mut bytes = prefix.clone();
                    apply(&mut bytes, *at, &data[..torn]);
                    out.push(bytes);
                }
                apply(&mut prefix, *at, data);
            }
            out.push(prefix);
            assert!(pending.len() <= 12, "{} pending writes", pending.len());
            for subset in 1..1u32 << pending.len() {
                let mut bytes = base.clone();
                for (i, (at, data)) in pending.iter().enumerate() {
                    if subset >> i & 1 == 1 {
                        apply(&mut bytes, *at, data);
                    }
                }
                out.push(bytes);
            }
            out
        }
    }

    fn apply_ns(names: &mut BTreeMap<PathBuf, Ino>, op: &NsOp) {
        match op {
            NsOp::Link(name, ino) => {
                names.insert(name.clone(), *ino);
            }
            NsOp::Rename(from, to, ino) => {
                names.remove(from);
                names.insert(to.clone(), *ino);
            }
            NsOp::Unlink(name) => {
                names.remove(name);
            }
        }
    }

    /// What the crash states after each prefix of a save's log showed.
    #[derive(Debug, Default)]
    struct Outcome {
        /// Crash states of the path (each with its bytes) …
        states: usize,
        /// … and of the temporary files left beside it.
        leftovers: usize,
        old: usize,
        new: usize,
        /// Descriptions of states holding neither file whole.
        bad: Vec<String>,
        /// States after the whole log (the save returned) that do not hold the new file.
        lost: Vec<String>,
    }

    /// Crashes after every prefix of `log` and checks what `path` holds in every crash state.
    fn crash_everywhere(path: &Path, old: &[u8], new: &[u8], log: &[Op]) -> Outcome {
        let (old_f, new_f) = (
            CuckooFilter::from_bytes(old).unwrap(),
            CuckooFilter::from_bytes(new).unwrap(),
        );
        let mut o = Outcome::default();
        for cut in 0..=log.len() {
            let r = Replay::new(path, old, &log[..cut]);
            for names in r.namespaces() {
                // Leftovers are temporary files, nothing else; whatever they hold (every torn
                // state of the new bytes) is never seen at the path.
                for (name, &ino) in &names {
                    let n = name.file_name().unwrap().to_string_lossy();
                    assert!(name == path || n.ends_with(".tmp"), "{name:?}");
                    if name != path {
                        o.leftovers += r.contents(ino).len();
                    }
                }
                let Some(&ino) = names.get(path) else {
                    o.bad.push(format!("after {cut} ops: {path:?} is gone"));
                    continue;
                };
                for bytes in r.contents(ino) {
                    o.states += 1;
                    let opened = CuckooFilter::from_bytes(&bytes).ok();
                    if bytes == old && opened.as_ref() == Some(&old_f) {
                        o.old += 1;
                    } else if bytes == new && opened.as_ref() == Some(&new_f) {
                        o.new += 1;
                    } else {
                        o.bad.push(format!(
                            "after {cut} ops ({:?}): {} bytes, opens: {}",
                            log.get(cut.wrapping_sub(1)),
                            bytes.len(),
                            opened.is_some()
                        ));
                    }
                    if cut == log.len() && bytes != new {
                        o.lost.push(format!("{} bytes", bytes.len()));
                    }
                }
            }
        }
        o
    }

    fn filters() -> (Vec<u8>, Vec<u8>) {
        let mut old = CuckooFilter::new(Config::new(100).seed(3)).unwrap();
        for i in 0..40u32 {
            old.insert(&i.to_le_bytes()).unwrap();
        }
        let mut new = old.clone();
        for i in 40..90u32 {
            new.insert(&i.to_le_bytes()).unwrap();
        }
        (old.to_bytes(), new.to_bytes())
    }

    /// `save` of `new` over `old` on a simulated disk: the result, the disk, and the path.
    fn save_on(faults: Faults) -> (Result<()>, SimFs, PathBuf, Vec<u8>, Vec<u8>) {
        let (old, new) = filters();
        let path = PathBuf::from("/db/000007.filter");
        let fs = SimFs::with_file(&path, &old, faults);
        let f = CuckooFilter::from_bytes(&new).unwrap();
        let result = save_atomic_with(&fs, &path, |w| {
            f.write_to(w).map_err(|e| match e {
                crate::Error::Io(e) => e,
                e => io::Error::other(e),
            })
        });
        (result, fs, path, old, new)
    }

    const SMALL_WRITES: Faults = Faults {
        max_write: 100,
        space: None,
        fail_sync: false,
        fail_rename: false,
        fail_sync_dir: false,
        skip_sync: false,
        skip_sync_dir: false,
    };

    #[test]
    fn a_save_records_create_writes_sync_rename_sync_dir() {
        let (result, fs, path, _old, new) = save_on(SMALL_WRITES);
        result.unwrap();
        let log = fs.log();
        let kinds: Vec<&str> = log
            .iter()
            .map(|op| match op {
                Op::Create { .. } => "create",
                Op::Write { .. } => "write",
                Op::Sync { .. } => "sync",
                Op::Rename { .. } => "rename",
                Op::Remove { .. } => "remove",
                Op::SyncDir => "sync_dir",
            })
            .collect();
        let writes = new.len().div_ceil(100);
        assert!(writes >= 3, "{} bytes", new.len());
        let mut want = vec!["create"];
        want.extend(std::iter::repeat_n("write", writes));
        want.extend(["sync", "rename", "sync_dir"]);
        assert_eq!(kinds, want);
        assert_eq!(fs.live(), BTreeMap::from([(path, new)]));
    }

    #[test]
    fn power_loss_at_every_point_leaves_the_old_or_the_new_file_whole() {
        let (result, fs, path, old, new) = save_on(SMALL_WRITES);
        result.unwrap();
        let o = crash_everywhere(&path, &old, &new, &fs.log());
        assert!(o.bad.is_empty(), "{:#?}", &o.bad[..o.bad.len().min(10)]);
        assert!(o.lost.is_empty(), "a completed save was lost: {:?}", o.lost);
        // Both outcomes occur, and the enumeration reaches every torn prefix of the writes
        // (held by the temporary file until its fsync).
        assert!(o.old > 0 && o.new > 0, "{o:?}");
        assert!(o.leftovers > new.len(), "{o:?}");
    }

    /// The model has teeth: without the file's fsync a crash can leave a torn or empty file at
    /// the path, and without the directory's fsync a completed save can be lost.
    #[test]
    fn the_model_catches_a_save_without_its_fsyncs() {
        let (result, fs, path, old, new) = save_on(Faults {
            skip_sync: true,
            ..SMALL_WRITES
        });
        result.unwrap();
        let o = crash_everywhere(&path, &old, &new, &fs.log());
        assert!(!o.bad.is_empty(), "{o:?}");

        let (result, fs, path, old, new) = save_on(Faults {
            skip_sync_dir: true,
            ..SMALL_WRITES
        });
        result.unwrap();
        let o = crash_everywhere(&path, &old, &new, &fs.log());
        assert!(o.bad.is_empty(), "{:?}", o.bad);
        assert!(!o.lost.is_empty(), "{o:?}");
    }

    /// After a failed save, the disk holds the old file and no temporary file, now and after a
    /// crash at any point.
    fn assert_untouched(fs: &SimFs, path: &Path, old: &[u8], new: &[u8]) {
        assert_eq!(
            fs.live(),
            BTreeMap::from([(path.to_path_buf(), old.to_vec())])
        );
        let o = crash_everywhere(path, old, new, &fs.log());
        assert!(o.bad.is_empty(), "{:?}", o.bad);
        assert_eq!(o.new, 0, "{o:?}");
    }

    #[test]
    fn a_failed_fsync_returns_the_error_and_leaves_the_old_file() {
        let (result, fs, path, old, new) = save_on(Faults {
            fail_sync: true,
            ..SMALL_WRITES
        });
        match result {
            Err(crate::Error::Io(e)) => assert_eq!(e.to_string(), "injected fsync failure"),
            other => panic!("{other:?}"),
        }
        assert_untouched(&fs, &path, &old, &new);
        assert!(matches!(fs.log().last(), Some(Op::Remove { .. })));
    }

    #[test]
    fn a_failed_rename_returns_the_error_and_leaves_the_old_file() {
        let (result, fs, path, old, new) = save_on(Faults {
            fail_rename: true,
            ..SMALL_WRITES
        });
        match result {
            Err(crate::Error::Io(e)) => assert_eq!(e.to_string(), "injected rename failure"),
            other => panic!("{other:?}"),
        }
        assert_untouched(&fs, &path, &old, &new);
    }

    #[test]
    fn a_full_disk_at_any_byte_returns_storage_full_and_leaves_the_old_file() {
        let (_, new) = filters();
        for space in (0..new.len()).step_by(7).chain([new.len() - 1]) {
            for max_write in [0, 100] {
                let (result, fs, path, old, new) = save_on(Faults {
                    space: Some(space),
                    max_write,
                    ..SMALL_WRITES
                });
                match result {
                    Err(crate::Error::Io(e)) => {
                        assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{space}")
                    }
                    other => panic!("space {space}: {other:?}"),
                }
                assert_untouched(&fs, &path, &old, &new);
            }
        }
        // With room for exactly the file, the save succeeds.
        let (result, fs, path, _, new) = save_on(Faults {
            space: Some(new.len()),
            ..SMALL_WRITES
        });
        result.unwrap();
        assert_eq!(fs.live(), BTreeMap::from([(path, new)]));
    }

    /// The directory fsync comes after the rename: its failure is returned as `NotDurable`
    /// (every other error leaves the path untouched), and the path then holds the new file,
    /// whose rename may not survive a crash (the old file may come back).
    #[test]
    fn a_failed_directory_fsync_is_returned_after_the_rename() {
        let (result, fs, path, old, new) = save_on(Faults {
            fail_sync_dir: true,
            ..SMALL_WRITES
        });
        match result {
            Err(e @ crate::Error::NotDurable(_)) => {
                let source = std::error::Error::source(&e).unwrap();
                assert_eq!(source.to_string(), "injected directory fsync failure");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fs.live(), BTreeMap::from([(path.clone(), new.clone())]));
        let o = crash_everywhere(&path, &old, &new, &fs.log());
        assert!(o.bad.is_empty(), "{:?}", o.bad);
        assert!(!o.lost.is_empty(), "{o:?}");
    }

    /// The real file system with a disk that fills up after `space` bytes: the temporary file
    /// is removed from the real directory.
    struct FullDisk {
        space: std::cell::Cell<usize>,
    }

    struct FullTemp<'a>(RealTemp, &'a std::cell::Cell<usize>);

    impl Write for FullTemp<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.1.get());
            if n == 0 && !buf.is_empty() {
                return Err(io::ErrorKind::StorageFull.into());
            }
            self.1.set(self.1.get() - n);
            self.0.write(&buf[..n])
        }

        fn flush(&mut self) -> io::Result<()> {
            self.0.flush()
        }
    }

    impl<'a> Fs for &'a FullDisk {
        type Temp = FullTemp<'a>;

        fn create_temp(&self, dir: &Path, prefix: &str, target: &Path) -> io::Result<FullTemp<'a>> {
            Ok(FullTemp(
                RealFs.create_temp(dir, prefix, target)?,
                &self.space,
            ))
        }

        fn sync(&self, tmp: &mut FullTemp<'a>) -> io::Result<()> {
            RealFs.sync(&mut tmp.0)
        }

        fn persist(&self, tmp: FullTemp<'a>, path: &Path) -> io::Result<()> {
            RealFs.persist(tmp.0, path)
        }

        fn discard(&self, tmp: FullTemp<'a>) {
            RealFs.discard(tmp.0)
        }

        fn sync_dir(&self, dir: &Path) -> io::Result<()> {
            RealFs.sync_dir(dir)
        }
    }

    #[test]
    fn a_full_real_disk_leaves_the_old_file_and_no_temporary() {
        let (old, new) = filters();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.filter");
        std::fs::write(&path, &old).unwrap();
        let f = CuckooFilter::from_bytes(&new).unwrap();
        for space in [0, 1, 128, new.len() - 1] {
            let disk = FullDisk {
                space: space.into(),
            };
            let result = save_atomic_with(&&disk, &path, |w| w.write_all(&f.to_bytes()));
            match result {
                Err(crate::Error::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::StorageFull),
                other => panic!("{other:?}"),
            }
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, ["f.filter"]);
            assert_eq!(std::fs::read(&path).unwrap(), old);
        }
        let disk = FullDisk {
            space: new.len().into(),
        };
        save_atomic_with(&&disk, &path, |w| w.write_all(&f.to_bytes())).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), new);
    }
}
