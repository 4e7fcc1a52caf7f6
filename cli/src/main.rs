//! `cuckoo-sst`: build, inspect, verify, query and benchmark cuckoo-sst filter files from the
//! command line. Exit codes: 0 success, 1 a damaged or foreign filter file, 2 a usage or I/O
//! error. Every failure is one line on standard error, never a panic.

mod header;
mod keys;
mod run_index;

use clap::{Args, Parser, Subcommand, ValueEnum};
use cuckoo_sst::{Config, Encoding, Error, FilterBuilder, MappedFilter, ScalableCuckooFilter};
use header::Header;
use indicatif::{ProgressBar, ProgressStyle};
use keys::KeyFormat;
use serde_json::json;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

const EXAMPLES: &str = "\
Examples:
  seq 1000000 | cuckoo-sst build -o keys.cuckoo        # a filter for 1 M keys, 1 % FPR
  cuckoo-sst info keys.cuckoo                          # what the file holds
  cuckoo-sst verify keys.cuckoo && echo whole          # every checksum and slot
  cuckoo-sst query keys.cuckoo 17 2000000              # present / absent, one line each
  cuckoo-sst bench keys.cuckoo                         # lookups per second here
  seq 1000 | cuckoo-sst build -o - | cuckoo-sst info - # `-`: standard output or input

Exit codes: 0 success; 1 a damaged or foreign filter file; 2 a usage or I/O error.";

/// Build, inspect, verify, query and benchmark cuckoo-sst filter files: the persisted cuckoo
/// filters an LSM tree keeps per SSTable to skip the disk read for a key that is not there.
#[derive(Parser)]
#[command(name = "cuckoo-sst", version, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build a filter file from keys read from a file or standard input.
    #[command(after_help = "\
Examples:
  cuckoo-sst build keys.txt -o keys.cuckoo              # one key per line, 1 % FPR
  seq 1000 | cuckoo-sst build -o small.cuckoo --fpr 0.001
  cuckoo-sst build ids.hex --format hex -o ids.cuckoo --encoding plain
  cuckoo-sst build keys.bin --format binary -o keys.cuckoo --seed 7
  cuckoo-sst build keys.txt -o chain.cuckoo --growable   # a chain that can grow later
  seq 1000 | cuckoo-sst build -o - | gzip > small.cuckoo.gz  # the filter on standard output

With `-o -` the filter goes to standard output (never to a terminal) and the summary line to
standard error.")]
    Build(BuildArgs),
    /// Show a filter file's header, levels, space, expected false-positive rate and checksum
    /// state.
    #[command(after_help = "\
Examples:
  cuckoo-sst info keys.cuckoo
  cuckoo-sst info keys.cuckoo --json | jq .levels[0].bits_per_item
  cuckoo-sst info huge.cuckoo --no-verify                # header and levels only, instantly
  gunzip -c small.cuckoo.gz | cuckoo-sst info -          # a filter on standard input

Exits 1 when the file is damaged (it still shows what it can).")]
    Info(InfoArgs),
    /// Check every checksum and every slot of a filter file.
    #[command(after_help = "\
Examples:
  cuckoo-sst verify keys.cuckoo
  cuckoo-sst verify *.cuckoo || echo damaged
  gunzip -c small.cuckoo.gz | cuckoo-sst verify -        # a filter on standard input

Exits 0 when the file is whole, 1 when it is damaged or not a filter file (naming what is wrong
and at which bytes), 2 when it cannot be read.")]
    Verify(VerifyArgs),
    /// Ask a filter file about keys: one `present` or `absent` line per key, in order.
    #[command(after_help = "\
Examples:
  cuckoo-sst query keys.cuckoo alice bob                 # keys as arguments
  cut -f1 requests.tsv | cuckoo-sst query keys.cuckoo    # keys on standard input
  cuckoo-sst query ids.cuckoo --format hex 6b6579
  gunzip -c small.cuckoo.gz | cuckoo-sst query - 17 18   # the filter on standard input: keys
                                                         # as arguments

`present` means the key may be in the set (false positives happen at the file's rate);
`absent` means it certainly is not.")]
    Query(QueryArgs),
    /// Measure single and batched lookups per second for a filter file on this machine.
    #[command(after_help = "\
Examples:
  cuckoo-sst bench keys.cuckoo
  cuckoo-sst bench keys.cuckoo --seconds 5 --keys 4000000

Queries random 16-byte keys (absent ones, the common case for an SSTable filter).")]
    Bench(BenchArgs),
}

#[derive(Args)]
struct BuildArgs {
    /// The keys: a file, or `-` for standard input.
    #[arg(default_value = "-")]
    input: PathBuf,
    /// The filter file to write (an existing file is replaced atomically, keeping its
    /// permissions), or `-` for standard output.
    #[arg(short, long)]
    output: PathBuf,
    /// How the keys are written.
    #[arg(long, value_enum, default_value_t = KeyFormat::Lines)]
    format: KeyFormat,
    /// The target false-positive rate, in (0, 1).
    #[arg(long, default_value_t = 0.01)]
    fpr: f64,
    /// The bucket layout [default: the smallest for the rate, usually semi-sorted].
    #[arg(long, value_enum)]
    encoding: Option<EncodingArg>,
    /// Write a growable chain (more levels as keys are added) instead of one filter sized
    /// exactly for the distinct keys.
    #[arg(long)]
    growable: bool,
    /// With --growable: the first level's capacity.
    #[arg(long, default_value_t = 65_536, requires = "growable")]
    initial_capacity: usize,
    /// The hash seed [default: the library's].
    #[arg(long)]
    seed: Option<u64>,
}

#[derive(Clone, Copy, ValueEnum)]
enum EncodingArg {
    /// 8-, 16- or 32-bit slots: the fastest lookups, the most space.
    Plain,
    /// Bit-packed fingerprints of any width.
    Packed,
    /// Buckets of 4 sorted, one bit per key smaller than packed.
    SemiSorted,
}

#[derive(Args)]
struct InfoArgs {
    /// The filter file, or `-` for standard input.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Skip the full check of every checksum and slot (reads only the header and levels).
    #[arg(long)]
    no_verify: bool,
}

#[derive(Args)]
struct VerifyArgs {
    /// The filter file, or `-` for standard input.
    file: PathBuf,
}

#[derive(Args)]
struct QueryArgs {
    /// The filter file, or `-` for standard input (the keys are then arguments).
    file: PathBuf,
    /// Keys to look up; none (or `-`) reads them from standard input, one per line.
    keys: Vec<std::ffi::OsString>,
    /// How the keys are written (arguments and standard input alike).
    #[arg(long, value_enum, default_value_t = KeyFormat::Lines)]
    format: KeyFormat,
}

#[derive(Args)]
struct BenchArgs {
    /// The filter file, or `-` for standard input.
    file: PathBuf,
    /// Distinct random keys to query.
    #[arg(long, default_value_t = 1 << 20)]
    keys: usize,
    /// Seconds to measure each way of looking up.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
}

/// Why a command failed, and so its exit code.
enum Failure {
    /// A damaged, truncated or foreign filter file: exit 1.
    Damaged(String),
    /// Bad usage, bad input or an I/O error: exit 2.
    Other(String),
}

type Outcome = Result<(), Failure>;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print and succeed; usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let outcome = match cli.command {
        Command::Build(a) => build(a),
        Command::Info(a) => info(a),
        Command::Verify(a) => verify(a),
        Command::Query(a) => query(a),
        Command::Bench(a) => bench(a),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Damaged(msg)) => {
            eprintln!("cuckoo-sst: {msg}");
            ExitCode::from(1)
        }
        Err(Failure::Other(msg)) => {
            eprintln!("cuckoo-sst: {msg}");
            ExitCode::from(2)
        }
    }
}

/// Writes to standard output; a closed pipe (`| head`) ends the command quietly.
fn out(text: impl AsRef<str>) -> Outcome {
    let mut stdout = io::stdout().lock();
    match stdout.write_all(text.as_ref().as_bytes()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::Other(format!("writing to standard output: {e}"))),
    }
}

/// Whether `path` is `-`: standard input or output.
fn is_std(path: &Path) -> bool {
    path == Path::new("-")
}

/// How messages name `path`: `standard input`/`standard output` for `-`.
fn shown(path: &Path, std_name: &str) -> String {
    if is_std(path) {
        std_name.to_string()
    } else {
        path.display().to_string()
    }
}

/// The bytes of `input` (`-` is standard input).
fn read_input(input: &Path) -> Result<Vec<u8>, Failure> {
    if input == Path::new("-") {
        let mut bytes = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::Other(format!("reading standard input: {e}")))?;
        return Ok(bytes);
    }
    check_readable_file(input)?;
    std::fs::read(input).map_err(|e| Failure::Other(format!("{}: {}", input.display(), io_msg(&e))))
}

/// Refuses a path that does not exist or is not a regular file, with a clear message.
fn check_readable_file(path: &Path) -> Outcome {
    let meta = std::fs::metadata(path)
        .map_err(|e| Failure::Other(format!("{}: {}", path.display(), io_msg(&e))))?;
    if meta.is_dir() {
        return Err(Failure::Other(format!(
            "{}: is a directory, not a file",
            path.display()
        )));
    }
    Ok(())
}

fn io_msg(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// Opens a filter file, or reads one from standard input (`-`) into memory: `verified`
/// checks every checksum and slot first.
fn open(path: &Path, verified: bool) -> Result<MappedFilter, Failure> {
    if is_std(path) {
        return open_shared(path, read_input(path)?.into(), verified);
    }
    check_readable_file(path)?;
    let opened = if verified {
        MappedFilter::open(path)
    } else {
        MappedFilter::open_unverified(path)
    };
    opened.map_err(|e| failure(&path.display().to_string(), read_head(path).as_deref(), e))
}

/// [`open`] for the bytes of standard input, already read.
fn open_shared(path: &Path, bytes: Arc<[u8]>, verified: bool) -> Result<MappedFilter, Failure> {
    let name = shown(path, "standard input");
    let opened = MappedFilter::from_shared(Arc::clone(&bytes));
    let opened = opened.and_then(|f| {
        if verified {
            f.verify().map(|()| f)
        } else {
            Ok(f)
        }
    });
    opened.map_err(|e| failure(&name, Some(&bytes), e))
}

/// Sorts a library error about the filter file named `p` (whose first bytes, if they could be
/// read, are `head`) into damage (exit 1) or anything else (exit 2), naming the bytes that are
/// wrong where the error says which part of the file it is.
fn failure(p: &str, head: Option<&[u8]>, e: Error) -> Failure {
    match e {
        Error::Io(e) => Failure::Other(format!("{p}: {}", io_msg(&e))),
        Error::ChecksumMismatch { ref part, .. } => {
            let at = where_is(head, part);
            Failure::Damaged(format!("{p}: {e}{at}"))
        }
        Error::Corrupt { ref field, .. } => {
            let at = where_is(head, field);
            Failure::Damaged(format!("{p}: {e}{at}"))
        }
        Error::BadMagic { .. } => Failure::Damaged(format!("{p}: {e} (bytes 0..8)")),
        Error::UnsupportedVersion { .. } => Failure::Damaged(format!("{p}: {e} (bytes 8..12)")),
        Error::Truncated { .. } | Error::TrailingBytes { .. } | Error::Growable { .. } => {
            Failure::Damaged(format!("{p}: {e}"))
        }
        other => Failure::Other(format!("{p}: {other}")),
    }
}

/// The bytes of the file that the part or field named by the decoder occupies, as
/// ` (bytes a..b)`, or nothing if it cannot be told. `head` is the file's first bytes (its
/// header and level table), if they could be read.
fn where_is(head: Option<&[u8]>, part: &str) -> String {
    let range = |(a, b): (u64, u64)| format!(" (bytes {a}..{b})");
    if part == "header" {
        return range((0, header::HEADER_LEN - 4)); // what header_crc covers
    }
    if let Some(bytes) = header::field(&header::HEADER_FIELDS, part) {
        return range(bytes);
    }
    if let Some((_, named)) = part.split_once(" (bytes ") {
        // The decoder named them ("level 0 chunk 3 (bytes a..b)"): repeated at the end, where
        // every message of this tool puts them.
        return format!(" (bytes {named}");
    }
    let header = head.and_then(Header::read);
    if part == "level table" {
        return header.map_or_else(String::new, |h| range(h.level_table_range()));
    }
    if part == "checksum table" {
        return header.map_or_else(String::new, |h| range(h.checksum_table_range()));
    }
    // "level K buckets" or "level K <field>".
    let mut words = part.splitn(3, ' ');
    let (Some("level"), Some(k), Some(rest)) = (words.next(), words.next(), words.next()) else {
        return String::new();
    };
    let Ok(k) = k.parse::<u64>() else {
        return String::new();
    };
    if rest == "buckets" {
        let level = header.as_ref().and_then(|h| h.levels.get(k as usize));
        return level.map_or_else(String::new, |l| {
            range((l.region_offset, l.region_offset + l.region_len))
        });
    }
    let base = header::HEADER_LEN + header::LEVEL_LEN * k;
    header::field(&header::LEVEL_FIELDS, rest)
        .map_or_else(String::new, |(a, b)| range((base + a, base + b)))
}

/// The header and level table of the file at `path`, read directly (at most 1 MiB).
fn read_head(path: &Path) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(1 << 20)
        .read_to_end(&mut head)
        .ok()?;
    Some(head)
}

fn build(a: BuildArgs) -> Outcome {
    let started = Instant::now();
    let input = read_input(&a.input)?;
    let name = if a.input == Path::new("-") {
        "standard input".to_string()
    } else {
        a.input.display().to_string()
    };
    let keys =
        keys::parse(&input, a.format).map_err(|e| Failure::Other(format!("{name}: {}", e.0)))?;
    let mut config = Config::new(if a.growable {
        a.initial_capacity
    } else {
        keys.len()
    })
    .false_positive_rate(a.fpr);
    if let Some(e) = a.encoding {
        config = config.encoding(match e {
            EncodingArg::Plain => Encoding::Plain,
            EncodingArg::Packed => Encoding::Packed,
            EncodingArg::SemiSorted => Encoding::SemiSorted,
        });
    }
    if let Some(seed) = a.seed {
        config = config.seed(seed);
    }
    let bad_config = |e: Error| Failure::Other(e.to_string());
    let to_stdout = is_std(&a.output);
    if to_stdout && io::stdout().is_terminal() {
        return Err(Failure::Other(
            "standard output is a terminal: not writing a binary filter to it (redirect it, or \
             give -o a file)"
                .into(),
        ));
    }
    if !to_stdout && a.output.is_dir() {
        return Err(Failure::Other(format!(
            "{}: is a directory, not a file",
            a.output.display()
        )));
    }
    let bar = progress(keys.len() as u64);
    let written = |e: Error| write_failure(&a.output, e);
    let (distinct, bytes, fpr, layouts) = if a.growable {
        let mut chain = ScalableCuckooFilter::new(config).map_err(bad_config)?;
        // Each distinct key once. (`insert_unique` would skip a new key that is a false
        // positive of the keys before it: the file would then count one key too few.)
        let mut distinct: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        distinct.sort_unstable();
        distinct.dedup();
        for (i, key) in distinct.iter().enumerate() {
            match chain.insert(key) {
                // A new key whose buckets are full of entries that already answer for it (a
                // false positive the filter cannot place again, about never): it is found.
                Ok(()) | Err(Error::TooManyCopies) => {}
                Err(e) => {
                    return Err(Failure::Other(format!("{}: {e}", a.output.display())));
                }
            }
            tick(&bar, i);
        }
        bar.finish_and_clear();
        if to_stdout {
            write_stdout(|w| chain.write_to(w)).map_err(written)?;
        } else {
            chain.save(&a.output).map_err(written)?;
        }
        let layouts = (0..chain.levels())
            .filter_map(|k| chain.level(k))
            .map(|l| layout(l.encoding(), l.bucket_size(), l.fingerprint_bits()))
            .collect::<Vec<_>>();
        (
            chain.len(),
            chain.size_in_bytes(),
            chain.expected_fpr(),
            layouts,
        )
    } else {
        let mut builder = FilterBuilder::new(config);
        for (i, key) in keys.iter().enumerate() {
            builder.add_key(key);
            tick(&bar, i);
        }
        bar.set_message("placing the keys");
        let filter = builder.finish().map_err(bad_config)?;
        bar.finish_and_clear();
        if to_stdout {
            write_stdout(|w| filter.write_to(w)).map_err(written)?;
        } else {
            filter.save(&a.output).map_err(written)?;
        }
        let l = layout(
            filter.encoding(),
            filter.bucket_size(),
            filter.fingerprint_bits(),
        );
        (
            filter.len(),
            filter.size_in_bytes(),
            filter.expected_fpr(),
            vec![l],
        )
    };
    let file_len = if to_stdout {
        bytes as u64
    } else {
        std::fs::metadata(&a.output)
            .map(|m| m.len())
            .unwrap_or(bytes as u64)
    };
    let bits = if distinct == 0 {
        0.0
    } else {
        file_len as f64 * 8.0 / distinct as f64
    };
    let summary = format!(
        "wrote {}: {} keys ({distinct} distinct), {file_len} bytes, {bits:.2} bits/key, \
         expected FPR {}, {} ({:.2} s)\n",
        shown(&a.output, "standard output"),
        keys.len(),
        percent(fpr),
        if layouts.len() == 1 {
            layouts[0].clone()
        } else {
            format!("{} levels: {}", layouts.len(), layouts.join(", "))
        },
        started.elapsed().as_secs_f64()
    );
    if to_stdout {
        // Standard output holds the filter.
        eprint!("{summary}");
        Ok(())
    } else {
        out(summary)
    }
}

/// Writes a filter to standard output through `write`, buffered, and flushes it.
fn write_stdout(write: impl FnOnce(&mut dyn Write) -> cuckoo_sst::Result<()>) -> Result<(), Error> {
    let mut w = io::BufWriter::with_capacity(1 << 20, io::stdout().lock());
    write(&mut w)?;
    w.flush()?;
    Ok(())
}

/// The message for a filter that could not be written to `path` (`-`: standard output),
/// naming `path`: the library's I/O errors say what failed, this says where.
fn write_failure(path: &Path, e: Error) -> Failure {
    let p = shown(path, "standard output");
    let Error::Io(io) = e else {
        // `NotDurable` says what happened after the file was replaced; the rest are not I/O.
        return Failure::Other(format!("{p}: {e}"));
    };
    let why = match io.kind() {
        io::ErrorKind::NotFound => "no such directory".to_string(),
        io::ErrorKind::NotADirectory => "a part of the path is not a directory".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        io::ErrorKind::IsADirectory => "is a directory, not a file".to_string(),
        io::ErrorKind::ReadOnlyFilesystem => "read-only file system".to_string(),
        io::ErrorKind::StorageFull => "no space left on the device".to_string(),
        io::ErrorKind::BrokenPipe => "the reader closed the pipe".to_string(),
        _ => io.to_string(),
    };
    Failure::Other(format!("{p}: cannot write the filter: {why}"))
}

/// A progress bar over `n` keys on a terminal; hidden when standard error is not one.
fn progress(n: u64) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(n);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} keys {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

fn tick(bar: &ProgressBar, i: usize) {
    if i.is_multiple_of(65_536) {
        bar.set_position(i as u64);
    }
}

fn layout(encoding: Encoding, b: usize, f: u32) -> String {
    format!("{encoding} b={b} f={f}")
}

fn percent(rate: f64) -> String {
    if rate >= 1e-4 {
        format!("{:.4} %", rate * 100.0)
    } else {
        format!("{rate:.2e}")
    }
}

fn info(a: InfoArgs) -> Outcome {
    let file = match run_index::input(&a.file)? {
        run_index::Input::Index(index) => {
            return run_index::info(&a.file, &index, a.json, a.no_verify);
        }
        run_index::Input::Stdin(bytes) => open_shared(&a.file, bytes, false)?,
        run_index::Input::Filter => open(&a.file, false)?,
    };
    let name = shown(&a.file, "standard input");
    let h = Header::read(file.as_bytes())
        .ok_or_else(|| Failure::Damaged(format!("{name}: header unreadable")))?;
    let check = if a.no_verify {
        None
    } else {
        Some(
            file.verify()
                .map_err(|e| failure(&name, Some(file.as_bytes()), e)),
        )
    };
    let checksums = match &check {
        None => "not checked (--no-verify)".to_string(),
        Some(Ok(())) => "ok (every checksum and slot checked)".to_string(),
        Some(Err(Failure::Damaged(m) | Failure::Other(m))) => format!("DAMAGED: {m}"),
    };
    let whole = matches!(check, Some(Ok(())));
    let region_bytes: u64 = h.levels.iter().map(|l| l.region_len).sum();
    let bits = (h.item_count > 0).then(|| h.file_len as f64 * 8.0 / h.item_count as f64);
    let expected = whole.then(|| file.expected_fpr());
    if a.json {
        let v = json!({
            "file": name,
            "file_bytes": h.file_len,
            "version": h.version,
            "hash_scheme": h.hash,
            "growable": h.growable(),
            "seed": h.seed,
            "max_kicks": h.max_kicks,
            "items": h.item_count,
            "target_fpr": h.target_fpr,
            "expected_fpr": expected,
            "bits_per_item": bits,
            "bucket_region_bytes": region_bytes,
            "chunk_bytes": h.chunk_bytes(),
            "chunks": h.chunk_bytes().map(|_| h.chunk_count),
            "chain": h.growable().then(|| json!({
                "growth_factor": h.growth_factor,
                "tightening": h.tightening,
                "max_levels": h.max_levels,
                "max_bytes": h.max_bytes,
                "bucket_size": h.chain_bucket_size,
                "encoding": (h.chain_encoding > 0).then(|| header::encoding_name(h.chain_encoding - 1)),
            })),
            "checksums": match &check {
                None => "unchecked",
                Some(Ok(())) => "ok",
                Some(Err(_)) => "damaged",
            },
            "damage": match &check {
                Some(Err(Failure::Damaged(m) | Failure::Other(m))) => Some(m.clone()),
                _ => None,
            },
            "levels": h.levels.iter().enumerate().map(|(k, l)| l.json(k)).collect::<Vec<_>>(),
        });
        out(format!("{v:#}\n"))?;
    } else {
        let mut s = String::new();
        let _ = writeln!(s, "file          {name} ({} bytes)", h.file_len);
        let _ = writeln!(
            s,
            "format        cuckoo-sst version {}, hash scheme {}",
            h.version, h.hash
        );
        if h.growable() {
            let limit = |v: u64| {
                if v == 0 {
                    "no limit".to_string()
                } else {
                    v.to_string()
                }
            };
            let levels = h.levels.len();
            let plural = if levels == 1 { "" } else { "s" };
            if h.levels.iter().any(|l| l.core_bits != 0) {
                // Version 3: levels grow in place; tightening r gives each new level 1 − r of
                // the false-positive budget the earlier ones left (FORMAT.md §8).
                let _ = writeln!(
                    s,
                    "kind          growable, {levels} level{plural} grown in place (tightening {}, max levels {}, max bytes {})",
                    h.tightening,
                    limit(h.max_levels as u64),
                    limit(h.max_bytes)
                );
            } else {
                let _ = writeln!(
                    s,
                    "kind          growable chain of {levels} level{plural} (growth factor {}, tightening {}, max levels {}, max bytes {})",
                    h.growth_factor,
                    h.tightening,
                    limit(h.max_levels as u64),
                    limit(h.max_bytes)
                );
            }
            if h.chain_bucket_size != 0 || h.chain_encoding != 0 {
                let _ = writeln!(
                    s,
                    "new levels    bucket size {}, encoding {}",
                    if h.chain_bucket_size == 0 {
                        "any".into()
                    } else {
                        h.chain_bucket_size.to_string()
                    },
                    if h.chain_encoding == 0 {
                        "any"
                    } else {
                        header::encoding_name(h.chain_encoding - 1)
                    }
                );
            }
        } else {
            let _ = writeln!(s, "kind          single filter");
        }
        let _ = writeln!(s, "seed          {:#018x}", h.seed);
        let _ = writeln!(s, "max kicks     {}", h.max_kicks);
        let _ = writeln!(s, "items         {}", h.item_count);
        let _ = writeln!(
            s,
            "FPR           target {}, expected now {}",
            percent(h.target_fpr),
            expected.map_or("unknown (not verified)".into(), percent)
        );
        let _ = writeln!(
            s,
            "bits/item     {}",
            bits.map_or("- (empty)".into(), |b| format!(
                "{b:.2} (file), bucket regions {region_bytes} bytes"
            ))
        );
        let _ = writeln!(
            s,
            "checksums     {checksums}; {}",
            match h.chunk_bytes() {
                Some(c) => format!("{} chunks of {} KiB", h.chunk_count, c >> 10),
                None => "one per level (version 1)".into(),
            }
        );
        let _ = writeln!(
            s,
            "{:>5}  {:<22} {:>12} {:>12} {:>12} {:>7} {:>12} {:>9}",
            "level", "layout", "buckets", "capacity", "items", "load", "bytes", "bits/item"
        );
        for (k, l) in h.levels.iter().enumerate() {
            let _ = writeln!(
                s,
                "{k:>5}  {:<22} {:>12} {:>12} {:>12} {:>6.1}% {:>12} {:>9}",
                l.layout(),
                l.num_buckets,
                l.sized_for().map_or("-".into(), |c| c.to_string()),
                l.keys(),
                l.load_factor() * 100.0,
                l.region_len,
                l.bits_per_item().map_or("-".into(), |b| format!("{b:.2}"))
            );
        }
        out(s)?;
    }
    match check {
        Some(Err(e)) => Err(e),
        _ => Ok(()),
    }
}

fn verify(a: VerifyArgs) -> Outcome {
    let file = match run_index::input(&a.file)? {
        run_index::Input::Index(index) => return run_index::verify(&a.file, &index),
        run_index::Input::Stdin(bytes) => open_shared(&a.file, bytes, true)?,
        run_index::Input::Filter => open(&a.file, true)?,
    };
    out(format!(
        "{}: ok — {} bytes, {} items in {} level{}, every checksum and slot checked\n",
        shown(&a.file, "standard input"),
        file.size_in_bytes(),
        file.len(),
        file.levels(),
        if file.levels() == 1 { "" } else { "s" }
    ))
}

fn query(a: QueryArgs) -> Outcome {
    let keys_on_stdin = a.keys.is_empty() || (a.keys.len() == 1 && a.keys[0] == "-");
    if is_std(&a.file) && keys_on_stdin {
        return Err(Failure::Other(
            "the filter is read from standard input, so the keys must be arguments".into(),
        ));
    }
    let file = open(&a.file, true)?;
    let stdin;
    let keys: Vec<Cow<'_, [u8]>> = if keys_on_stdin {
        stdin = read_input(Path::new("-"))?;
        keys::parse(&stdin, a.format)
            .map_err(|e| Failure::Other(format!("standard input: {}", e.0)))?
    } else {
        let mut keys = Vec::with_capacity(a.keys.len());
        for (i, arg) in a.keys.iter().enumerate() {
            let bytes = arg.as_encoded_bytes();
            let mut parsed = keys::parse(bytes, a.format).map_err(|e| {
                Failure::Other(format!(
                    "argument {}: {}",
                    i + 1,
                    e.0.trim_start_matches("line 1: ")
                ))
            })?;
            if parsed.len() != 1 {
                return Err(Failure::Other(format!(
                    "argument {}: one key per argument (it holds {})",
                    i + 1,
                    parsed.len()
                )));
            }
            keys.push(Cow::Owned(parsed.remove(0).into_owned()));
        }
        keys
    };
    let mut found = vec![false; keys.len()];
    file.contains_batch_keys(&keys, &mut found);
    let mut text = String::with_capacity(found.len() * 8);
    for f in found {
        text.push_str(if f { "present\n" } else { "absent\n" });
    }
    out(text)
}

fn bench(a: BenchArgs) -> Outcome {
    if a.keys == 0 || !(a.seconds > 0.0 && a.seconds <= 3600.0) {
        return Err(Failure::Other(
            "bench: --keys must be at least 1 and --seconds in (0, 3600]".into(),
        ));
    }
    let file = open(&a.file, true)?;
    // SplitMix64: random 16-byte keys, the same on every run.
    let mut state = 0x5EED_u64;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let keys: Vec<[u8; 16]> = (0..a.keys)
        .map(|_| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&next().to_le_bytes());
            k[8..].copy_from_slice(&next().to_le_bytes());
            k
        })
        .collect();
    let budget = Duration::from_secs_f64(a.seconds);
    let (mut lookups, mut hits) = (0u64, 0u64);
    let started = Instant::now();
    while started.elapsed() < budget {
        for chunk in keys.chunks(4096) {
            hits += chunk
                .iter()
                .filter(|k| file.contains(std::hint::black_box(&k[..])))
                .count() as u64;
            lookups += chunk.len() as u64;
        }
    }
    let single = lookups as f64 / started.elapsed().as_secs_f64();
    let rate = hits as f64 / lookups as f64;
    let (mut batched, mut out_buf) = (0u64, vec![false; 4096]);
    let started = Instant::now();
    while started.elapsed() < budget {
        for chunk in keys.chunks(4096) {
            let o = &mut out_buf[..chunk.len()];
            file.contains_batch_keys(chunk, o);
            std::hint::black_box(&o);
            batched += chunk.len() as u64;
        }
    }
    let batch = batched as f64 / started.elapsed().as_secs_f64();
    out(format!(
        "{}: {} items, {} bytes, {} level{}\n\
         single lookups   {:>8.2} M/s  (`contains`, one key at a time)\n\
         batched lookups  {:>8.2} M/s  (`contains_batch_keys`, 4096 keys per call)\n\
         {} random 16-byte keys, {:.4} % answered present (expected FPR {})\n",
        shown(&a.file, "standard input"),
        file.len(),
        file.size_in_bytes(),
        file.levels(),
        if file.levels() == 1 { "" } else { "s" },
        single / 1e6,
        batch / 1e6,
        a.keys,
        rate * 100.0,
        percent(file.expected_fpr())
    ))
}
