//! `info` and `verify` for a run-index file (FORMAT.md §12): recognized by its magic (on a path
//! or standard input), opened
//! with `MappedRunIndex` (header, run table and checksum table checked at open), its header
//! fields read here from the bytes as §12.1 lays them out.

use crate::{Failure, Outcome, io_msg, out, percent};
use cuckoo_sst::{Error, MappedRunIndex};
use serde_json::json;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// FORMAT.md §12.1: a run-index file's first eight bytes.
const MAGIC: &[u8; 8] = b"CUCKORIX";

/// What `info` and `verify` were given.
pub enum Input {
    /// A run-index file (from a path, or standard input), opened.
    Index(Box<MappedRunIndex>),
    /// Standard input's bytes, not a run index: a filter, or nothing the tool reads.
    Stdin(Arc<[u8]>),
    /// A path to a file that does not start with a run index's magic (or cannot be read:
    /// the filter reader says why).
    Filter,
}

/// Sorts the input at `path`: a run index is recognized by its magic, read from the file's
/// first bytes or from standard input (which is read whole, once).
pub fn input(path: &Path) -> Result<Input, Failure> {
    if crate::is_std(path) {
        let bytes: Arc<[u8]> = crate::read_input(path)?.into();
        if !bytes.starts_with(MAGIC) {
            return Ok(Input::Stdin(bytes));
        }
        let name = crate::shown(path, "standard input");
        return MappedRunIndex::from_shared(Arc::clone(&bytes))
            .map(|index| Input::Index(Box::new(index)))
            .map_err(|e| failure(&name, Some(&bytes), e));
    }
    let mut head = [0u8; 8];
    let is_index = std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == MAGIC);
    if !is_index {
        return Ok(Input::Filter);
    }
    crate::check_readable_file(path)?;
    let p = path.display().to_string();
    MappedRunIndex::open(path)
        .map(|index| Input::Index(Box::new(index)))
        .map_err(|e| {
            let head = crate::read_head(path);
            failure(&p, head.as_deref(), e)
        })
}

/// The header fields `info` shows (FORMAT.md §12.1), from bytes the library accepted.
struct Fields {
    version: u32,
    flags: u32,
    hash: u32,
    seed: u64,
    target_fpr: f64,
    max_kicks: u32,
    num_buckets: u64,
    bucket_size: u8,
    slot_bits: u8,
    encoding: u8,
    core_bits: u8,
    payload_bits: u8,
    chunk_shift: u8,
    key_count: u64,
    entry_count: u64,
    chunk_count: u32,
    region_bytes: u64,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

impl Fields {
    fn read(b: &[u8]) -> Fields {
        let byte = |at: usize| b.get(at).copied().unwrap_or(0);
        let runs = u32_at(b, 52) as u64;
        let chunk_count = u32_at(b, 104);
        let start =
            128 + (16 * runs).next_multiple_of(64) + (4 * chunk_count as u64).next_multiple_of(64);
        Fields {
            version: u32_at(b, 8),
            flags: u32_at(b, 24),
            hash: u32_at(b, 28),
            seed: u64_at(b, 32),
            target_fpr: f64::from_bits(u64_at(b, 40)),
            max_kicks: u32_at(b, 48),
            num_buckets: u64_at(b, 56),
            bucket_size: byte(64),
            slot_bits: byte(65),
            encoding: byte(66),
            core_bits: byte(67),
            payload_bits: byte(68),
            chunk_shift: byte(69),
            key_count: u64_at(b, 72),
            entry_count: u64_at(b, 80),
            chunk_count,
            region_bytes: (b.len() as u64).saturating_sub(start),
        }
    }
}

/// The bytes FORMAT.md §12 gives a part or field the library names, as ` (bytes a..b)`.
fn where_is(bytes: Option<&[u8]>, part: &str) -> String {
    let range = |a: u64, b: u64| format!(" (bytes {a}..{b})");
    let field = |a: u64, n: u64| range(a, a + n);
    let runs = bytes.map(|b| u32_at(b, 52) as u64);
    match part {
        "header" => range(0, 124),
        "version" => field(8, 4),
        "header_len" => field(12, 4),
        "file_len" => field(16, 8),
        "flags" => field(24, 4),
        "hash" => field(28, 4),
        "target_fpr" => field(40, 8),
        "max_kicks" => field(48, 4),
        "run_count" => field(52, 4),
        "num_buckets" => field(56, 8),
        "bucket_size" => field(64, 1),
        "slot_bits" => field(65, 1),
        "encoding" => field(66, 1),
        "core_bits" => field(67, 1),
        "payload_bits" => field(68, 1),
        "chunk_shift" => field(69, 1),
        "key_count" => field(72, 8),
        "entry_count" => field(80, 8),
        "precision" => field(88, 8),
        "runs_digest" => field(96, 8),
        "chunk_count" => field(104, 4),
        "run table" => runs.map_or_else(String::new, |r| {
            range(128, 128 + (16 * r).next_multiple_of(64).max(1))
        }),
        "checksum table" => bytes.map_or_else(String::new, |b| {
            let start = 128 + (16 * u32_at(b, 52) as u64).next_multiple_of(64);
            range(
                start,
                start + (4 * u32_at(b, 104) as u64).next_multiple_of(64),
            )
        }),
        _ => match part.split_once(" (bytes ") {
            Some((_, named)) => format!(" (bytes {named}"),
            None => String::new(),
        },
    }
}

/// A library error about the run-index file `p` as the tool reports it: damage (exit 1) with
/// the bytes it lies in where they can be told, or anything else (exit 2).
fn failure(p: &str, bytes: Option<&[u8]>, e: Error) -> Failure {
    match e {
        Error::Io(e) => Failure::Other(format!("{p}: {}", io_msg(&e))),
        Error::ChecksumMismatch { ref part, .. } => {
            Failure::Damaged(format!("{p}: {e}{}", where_is(bytes, part)))
        }
        Error::Corrupt { ref field, .. } => {
            Failure::Damaged(format!("{p}: {e}{}", where_is(bytes, field)))
        }
        Error::UnsupportedVersion { .. } => Failure::Damaged(format!("{p}: {e} (bytes 8..12)")),
        other => Failure::Damaged(format!("{p}: {other}")),
    }
}

/// `info` of a run-index file: its header, runs, space and checksum state.
pub fn info(path: &Path, index: &MappedRunIndex, json_out: bool, no_verify: bool) -> Outcome {
    let name = crate::shown(path, "standard input");
    let bytes = index.as_bytes();
    let f = Fields::read(bytes);
    let check = (!no_verify).then(|| index.verify().map_err(|e| failure(&name, Some(bytes), e)));
    let whole = matches!(check, Some(Ok(())));
    let expected = whole.then(|| index.expected_fpr());
    let damage = match &check {
        Some(Err(Failure::Damaged(m) | Failure::Other(m))) => Some(m.clone()),
        _ => None,
    };
    let bits = (f.key_count > 0).then(|| bytes.len() as f64 * 8.0 / f.key_count as f64);
    let encoding = crate::header::encoding_name(f.encoding);
    if json_out {
        let v = json!({
            "file": name,
            "file_bytes": bytes.len(),
            "kind": "run index",
            "version": f.version,
            "hash_scheme": f.hash,
            "seed": f.seed,
            "max_kicks": f.max_kicks,
            "stale": f.flags & 1 != 0,
            "runs": index.runs(),
            "runs_digest": format!("{:#018x}", index.runs_digest()),
            "keys": f.key_count,
            "entries": f.entry_count,
            "target_fpr": f.target_fpr,
            "expected_fpr": expected,
            "bits_per_key": bits,
            "num_buckets": f.num_buckets,
            "bucket_size": f.bucket_size,
            "slot_bits": f.slot_bits,
            "encoding": encoding,
            "core_bits": f.core_bits,
            "run_id_bits": f.payload_bits,
            "bucket_region_bytes": f.region_bytes,
            "chunk_bytes": 1u64 << f.chunk_shift,
            "chunks": f.chunk_count,
            "checksums": match &check {
                None => "unchecked",
                Some(Ok(())) => "ok",
                Some(Err(_)) => "damaged",
            },
            "damage": damage,
        });
        out(format!("{v:#}\n"))?;
    } else {
        let mut s = String::new();
        let runs: Vec<String> = index.runs().iter().map(u64::to_string).collect();
        let _ = writeln!(s, "file          {name} ({} bytes)", bytes.len());
        let _ = writeln!(
            s,
            "format        cuckoo-sst run index version {}, hash scheme {}",
            f.version, f.hash
        );
        let _ = writeln!(
            s,
            "kind          run index of {} run{}{}",
            runs.len(),
            if runs.len() == 1 { "" } else { "s" },
            if f.flags & 1 != 0 {
                " — STALE: every lookup answers every run"
            } else {
                ""
            }
        );
        let _ = writeln!(
            s,
            "runs          {} (newest first; digest {:#018x})",
            if runs.is_empty() {
                "none".to_string()
            } else {
                runs.join(", ")
            },
            index.runs_digest()
        );
        let _ = writeln!(s, "seed          {:#018x}", f.seed);
        let _ = writeln!(s, "max kicks     {}", f.max_kicks);
        let _ = writeln!(
            s,
            "keys          {} ({} entries)",
            f.key_count, f.entry_count
        );
        let _ = writeln!(
            s,
            "FPR           target {}, expected now {}",
            percent(f.target_fpr),
            expected.map_or("unknown (not verified)".into(), percent)
        );
        let _ = writeln!(
            s,
            "layout        {} buckets, {encoding} b={} w={} c={}, {}-bit run ids",
            f.num_buckets, f.bucket_size, f.slot_bits, f.core_bits, f.payload_bits
        );
        let _ = writeln!(
            s,
            "bits/key      {}",
            bits.map_or("- (empty)".into(), |b| format!(
                "{b:.2} (file), bucket region {} bytes",
                f.region_bytes
            ))
        );
        let _ = writeln!(
            s,
            "checksums     {}; {} chunks of {} KiB",
            match &check {
                None => "not checked (--no-verify)".to_string(),
                Some(Ok(())) => "ok (every checksum and slot checked)".to_string(),
                Some(Err(_)) => format!("DAMAGED: {}", damage.as_deref().unwrap_or("")),
            },
            f.chunk_count,
            (1u64 << f.chunk_shift) >> 10
        );
        out(s)?;
    }
    match check {
        Some(Err(e)) => Err(e),
        _ => Ok(()),
    }
}

/// `verify` of a run-index file: every checksum and slot.
pub fn verify(path: &Path, index: &MappedRunIndex) -> Outcome {
    let name = crate::shown(path, "standard input");
    index
        .verify()
        .map_err(|e| failure(&name, Some(index.as_bytes()), e))?;
    let runs = index.runs().len();
    out(format!(
        "{name}: ok — run index, {} bytes, {} entries for {runs} run{}{}, every checksum and slot checked\n",
        index.as_bytes().len(),
        index.len(),
        if runs == 1 { "" } else { "s" },
        if index.is_stale() { " (stale)" } else { "" }
    ))
}
