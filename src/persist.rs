//! Atomic, durable replacement of a file: write a temporary file beside it, fsync, rename over
//! the target, fsync the directory.

use crate::error::Result;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Writes the bytes produced by `write` to `path` so that a crash at any moment leaves either
/// the old file or the complete new one at `path`, never a torn one.
///
/// The data goes to a temporary file in the same directory (so the rename stays within one
/// file system), which is flushed and fsynced, then renamed over `path`; finally the directory
/// is fsynced so that the rename itself is durable. Any error — in `write`, in a flush or in an
/// fsync — returns before the rename, and the temporary file is removed.
pub(crate) fn save_atomic(
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
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    {
        let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)?;
    Ok(())
}

/// Makes a rename in `dir` durable.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
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

    #[test]
    fn a_missing_directory_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/f.bin");
        match save_atomic(&path, |w| w.write_all(b"x")) {
            Err(crate::Error::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bare_file_name_saves_in_the_current_directory() {
        let name = format!("cuckoo-sst-test-{}.bin", std::process::id());
        save_atomic(Path::new(&name), |w| w.write_all(b"here")).unwrap();
        assert_eq!(std::fs::read(&name).unwrap(), b"here");
        std::fs::remove_file(&name).unwrap();
    }
}
