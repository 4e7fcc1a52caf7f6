//! The cuckoo policy against LevelDB's Bloom filter (10 bits a key), inside LevelDB 1.23.
//!
//! ```text
//! cargo run --release -p cuckoo-sst-leveldb --example vs_bloom -- [KEYS] [VALUE_LEN]
//! ```
//!
//! The same KEYS (default 200 000) 16-byte keys with VALUE_LEN-byte values (default 100) are
//! written into four databases — no filter, LevelDB's built-in Bloom filter, the C clone of it
//! (cksst_leveldb.c, which counts its lookups), the cuckoo policy — each into one memtable and
//! then compacted (`compact_range` over everything), compression off, 4 KiB blocks: the same
//! data blocks in each, so that the tables differ by their filter blocks alone. Then KEYS
//! absent keys are looked up in each, and the policy counts how many of its `key_may_match`
//! calls answered "maybe".
//!
//! - filter bits/key (Δ tables) = (.ldb bytes with the filter − .ldb bytes without) × 8 / KEYS:
//!   the filters, LevelDB's array of filter offsets (4 bytes per 2 KiB of data), the filter
//!   block's trailer and its metaindex entry;
//! - filter bits/key (filters) = the filters' own bytes × 8 / KEYS;
//! - measured FPR = "maybe" answers / `key_may_match` calls, over the absent-key lookups.
//!
//! The built-in Bloom filter's callbacks are not reachable through LevelDB's C API, so its
//! rate is measured through the clone: the example checks that the two wrote the same bytes.

use std::fs;
use std::path::Path;

use cuckoo_sst_leveldb::{Db, Kind, Options, Policy, Stats, WriteBatch, table};

/// SplitMix64's finalizer: a bijection of u64.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `i`-th 16-byte key of a domain (1: written, 2: absent), distinct for distinct
/// (domain, i).
fn key(domain: u64, i: u64) -> [u8; 16] {
    let a = mix((domain << 56) | i);
    let b = mix(a ^ 0x5851_f42d_4c95_7f2d);
    let mut k = [0; 16];
    k[..8].copy_from_slice(&a.to_be_bytes());
    k[8..].copy_from_slice(&b.to_le_bytes());
    k
}

fn value(i: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    let mut x = mix(i ^ 0xdead_beef);
    while v.len() < len {
        v.extend_from_slice(&x.to_le_bytes());
        x = mix(x);
    }
    v.truncate(len);
    v
}

/// What one database measured.
struct Row {
    label: &'static str,
    table_bytes: u64,
    tables: usize,
    data_blocks: usize,
    filters: usize,
    filter_bytes: u64,
    files: Vec<Vec<u8>>,
    absent: Option<Stats>,
}

fn measure(
    label: &'static str,
    policy: Option<&Policy>,
    path: &Path,
    keys: u64,
    value_len: usize,
) -> Row {
    let opts = Options {
        policy,
        // Everything in one memtable: one flush, the same tables whatever the timing of
        // LevelDB's background thread.
        write_buffer_size: keys as usize * (value_len + 128) + (4 << 20),
        ..Options::default()
    };
    {
        let db = Db::open(path, &opts).expect("open");
        let mut batch = WriteBatch::new();
        for i in 0..keys {
            batch.put(&key(1, i), &value(i, value_len));
            if batch.len() == 1000 {
                db.write(&mut batch).expect("write");
                batch.clear();
            }
        }
        db.write(&mut batch).expect("write");
        db.compact_all();
    }

    let mut row = Row {
        label,
        table_bytes: table::table_bytes(path).expect("table files"),
        tables: 0,
        data_blocks: 0,
        filters: 0,
        filter_bytes: 0,
        files: Vec::new(),
        absent: None,
    };
    for file in table::table_files(path).expect("table files") {
        let bytes = fs::read(&file).expect("read table");
        let t = table::read(&bytes).expect("a LevelDB table");
        row.tables += 1;
        row.data_blocks += t.data_blocks.len();
        for fb in &t.filters {
            for r in fb.nonempty() {
                row.filters += 1;
                row.filter_bytes += r.len() as u64;
            }
        }
        row.files.push(bytes);
    }

    if let Some(policy) = policy {
        let opts = Options {
            create_if_missing: false,
            ..opts
        };
        let db = Db::open(path, &opts).expect("reopen");
        for i in 0..keys {
            assert!(db.get(&key(1, i)).expect("get").is_some(), "key {i} lost");
        }
        policy.reset_stats();
        for i in 0..keys {
            assert!(db.get(&key(2, i)).expect("get").is_none(), "absent key {i}");
        }
        row.absent = policy.stats();
    }
    row
}

fn main() {
    let mut args = std::env::args().skip(1);
    let keys: u64 = args
        .next()
        .map_or(200_000, |a| a.parse().expect("KEYS: a number"));
    let value_len: usize = args
        .next()
        .map_or(100, |a| a.parse().expect("VALUE_LEN: a number"));
    let dir = tempfile::tempdir().expect("temporary directory");

    let builtin = Policy::new(Kind::BuiltinBloom(10));
    let clone = Policy::new(Kind::BloomClone(10));
    let cuckoo = Policy::cuckoo();
    let runs: [(&'static str, Option<&Policy>); 4] = [
        ("no filter", None),
        ("LevelDB built-in Bloom, 10 bits/key", Some(&builtin)),
        ("Bloom clone (cksst_leveldb.c), 10 bits/key", Some(&clone)),
        ("cuckoo-sst compact (cksst_leveldb.c)", Some(&cuckoo)),
    ];
    let rows: Vec<Row> = runs
        .iter()
        .enumerate()
        .map(|(n, &(label, policy))| {
            let path = dir.path().join(format!("db{n}"));
            measure(label, policy, &path, keys, value_len)
        })
        .collect();

    let base = &rows[0];
    for r in &rows[1..] {
        assert_eq!(
            r.data_blocks, base.data_blocks,
            "{}: other data blocks",
            r.label
        );
    }
    let identical = rows[1].files == rows[2].files;

    println!(
        "{keys} keys of 16 bytes, {value_len}-byte values; {keys} absent-key lookups; \
         block_size 4096, compression off, one memtable compacted into {} table(s) of {} data \
         blocks: {:.1} keys per filter on average\n",
        base.tables,
        base.data_blocks,
        keys as f64 / base.data_blocks as f64,
    );
    println!(
        "| policy | .ldb bytes | filter bits/key (Δ tables) | filter bits/key (filters) | \
         measured FPR | absent lookups (filter probes) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    println!("| {} | {} | — | — | — | — |", base.label, base.table_bytes);
    for r in &rows[1..] {
        let delta = (r.table_bytes as f64 - base.table_bytes as f64) * 8.0 / keys as f64;
        let own = r.filter_bytes as f64 * 8.0 / keys as f64;
        let (fpr, probes) = match &r.absent {
            Some(s) if s.lookups > 0 => (
                format!(
                    "{:.3} % ({} maybe)",
                    100.0 * s.maybe as f64 / s.lookups as f64,
                    s.maybe
                ),
                s.lookups.to_string(),
            ),
            Some(s) => ("—".into(), s.lookups.to_string()),
            None => ("(the clone's: same bytes)".into(), "not countable".into()),
        };
        println!(
            "| {} | {} | {delta:.2} | {own:.2} | {fpr} | {probes} |",
            r.label, r.table_bytes
        );
    }
    println!(
        "\nbuilt-in Bloom and clone table files identical: {}",
        if identical { "yes" } else { "NO" }
    );
    let filters = rows[3].filters.max(1);
    println!(
        "filters: {} per database (one per data block), {:.1} keys each on average; \
         LevelDB's filter-block overhead (offset array, trailer, metaindex entry) adds {:.2} bits/key to every policy",
        rows[3].filters,
        keys as f64 / filters as f64,
        (rows[3].table_bytes as f64 - base.table_bytes as f64 - rows[3].filter_bytes as f64) * 8.0
            / keys as f64,
    );
    assert!(
        identical,
        "the Bloom clone wrote other bytes than LevelDB's"
    );
}
