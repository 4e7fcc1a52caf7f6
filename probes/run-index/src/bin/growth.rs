//! Probe for issue 41, growth: what a run index that grows with a leveled LSM-tree costs in
//! bits per entry and probes per read, for two designs, over a tree grown from one memtable
//! to `FLUSHES` of them.
//!
//! ```text
//! cargo run --release --bin growth -- [FLUSHES] [GROWTH] [chain-only]
//! ```
//!
//! The tree: unique keys (inserts only), memtables of 1 M keys flushed to L0; when L0 holds 4
//! runs they are merged with L1 into a new L1; a level past its capacity (L1 10 M keys, each
//! next one 10×) is merged into the next as a whole (full merges, a simplification: a real
//! leveled tree rewrites a level piecewise, at about the same rate). Every merge keeps every
//! key. Runs live at once: up to 4 in L0 and one per level, so run ids of 4 bits suffice.
//!
//! - **chain**: classic tables of (fingerprint, run id) slots, 12 bits per slot (the crate's
//!   semi-sorted encoding of a 9-bit fingerprint and a 4-bit id), filled to 95 %. A flush
//!   fills the newest table; when it is full a new one is made for GROWTH × the live entries
//!   (default 2). A merge moves the keys it keeps out of older tables into the newest (a
//!   removal there and an insert here; the keys already in the newest are retargeted in
//!   place), so older tables drain as the tree is rewritten; an empty table is freed. Only
//!   counts are simulated (a classic table at ≤ 95 % takes its keys; the updates probe checks
//!   that with real tables).
//! - **stretch**: the crate's growable filter (`ScalableCuckooFilter`, one stretch level that
//!   grows in place) at the index's rate target (2.4 %: 1/5 of 16 per-table filters' table
//!   reads), fed the same keys; its bits per key, plus 4 run-id bits per slot (its slots are
//!   wider by 4 bits at its load), estimate a stretch-level index. A merge needs no move (it
//!   retargets in place).
//!
//! Printed at each power of two of flushes: live entries, live runs; for each design its bits
//! per entry and its probes per read (tables, or levels).

use cuckoo_sst::{Config, ScalableCuckooFilter};
use xxhash_rust::xxh3::xxh3_64;

const MEMTABLE: u64 = 1_000_000;
const SLOT_BITS: f64 = 12.0;
const LOAD: f64 = 0.95;

#[derive(Clone, Debug)]
struct Run {
    /// Entries of the run in each table of the chain (by table number).
    by_table: Vec<u64>,
}

impl Run {
    fn len(&self) -> u64 {
        self.by_table.iter().sum()
    }
}

#[derive(Default)]
struct Chain {
    /// Slots of each table; a freed table has 0.
    slots: Vec<u64>,
    growth: f64,
    /// Entries moved by merges (removed from an older table, inserted into the newest).
    moved: u64,
}

impl Chain {
    fn newest(&self) -> usize {
        self.slots.len() - 1
    }

    fn used(&self, runs: &[Run], t: usize) -> u64 {
        runs.iter().map(|r| r.by_table.get(t).copied().unwrap_or(0)).sum()
    }

    fn room(&self, runs: &[Run]) -> u64 {
        let t = self.newest();
        ((self.slots[t] as f64 * LOAD) as u64).saturating_sub(self.used(runs, t))
    }

    /// `n` entries of `run` (an index into `runs`) inserted into the newest tables.
    fn insert(&mut self, runs: &mut [Run], run: usize, mut n: u64) {
        while n > 0 {
            if self.slots.is_empty() || self.room(runs) == 0 {
                let live: u64 = runs.iter().map(Run::len).sum();
                let want = ((live + n) as f64 * self.growth).max(MEMTABLE as f64);
                self.slots.push((want / LOAD).ceil() as u64);
            }
            let t = self.newest();
            let k = n.min(self.room(runs));
            let r = &mut runs[run];
            r.by_table.resize(t + 1, 0);
            r.by_table[t] += k;
            n -= k;
        }
    }

    /// Frees every table but the newest that holds no entry.
    fn free_empty(&mut self, runs: &[Run]) {
        for t in 0..self.newest() {
            if self.slots[t] > 0 && self.used(runs, t) == 0 {
                self.slots[t] = 0;
            }
        }
    }

    fn bits(&self, runs: &[Run]) -> f64 {
        let live: u64 = runs.iter().map(Run::len).sum();
        self.slots.iter().sum::<u64>() as f64 * SLOT_BITS / live as f64
    }

    fn probes(&self) -> usize {
        self.slots.iter().filter(|&&s| s > 0).count()
    }
}

/// The tree: `levels[0]` the L0 runs (oldest first), `levels[i]` the run of level i.
struct Tree {
    l0: Vec<usize>,
    levels: Vec<Option<usize>>,
    runs: Vec<Run>,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let flushes: u64 = args.next().map(|a| a.parse().unwrap()).unwrap_or(256);
    let growth: f64 = args.next().map(|a| a.parse().unwrap()).unwrap_or(2.0);
    // A third argument leaves the stretch design out (the chain alone runs in a moment).
    let skip_stretch = args.next().is_some();
    let mut chain = Chain {
        growth,
        ..Chain::default()
    };
    let mut tree = Tree {
        l0: Vec::new(),
        levels: Vec::new(),
        runs: Vec::new(),
    };
    let mut stretch = ScalableCuckooFilter::new(Config::new(MEMTABLE as usize).false_positive_rate(0.024))
        .unwrap();
    let mut next_key = 0u64;
    let (mut sum_bits, mut max_bits, mut sum_probes) = (0.0f64, 0.0f64, 0usize);
    println!(
        "# run-index growth: memtables of 1 M keys, L0 of 4 runs, levels 10 M × 10^i, full merges; chain growth {growth}"
    );
    println!("| flushes | entries | runs | chain bits/entry | chain tables | stretch bits/entry (est.) | stretch levels |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for flush in 1..=flushes {
        // Flush: a new run in L0.
        let id = tree.runs.len();
        tree.runs.push(Run { by_table: Vec::new() });
        chain.insert(&mut tree.runs, id, MEMTABLE);
        tree.l0.push(id);
        for _ in 0..if skip_stretch { 0 } else { MEMTABLE } {
            stretch
                .insert_unique(&xxh3_64(&next_key.to_le_bytes()).to_le_bytes())
                .unwrap();
            next_key += 1;
        }
        // Compactions.
        if tree.l0.len() >= 4 {
            let mut merged: Vec<usize> = std::mem::take(&mut tree.l0);
            if tree.levels.is_empty() {
                tree.levels.push(None);
            }
            merged.extend(tree.levels[0].take());
            let out = merge(&mut chain, &mut tree.runs, &merged);
            tree.levels[0] = Some(out);
            let mut i = 0;
            let mut cap = 10 * MEMTABLE;
            while let Some(r) = tree.levels[i] {
                if tree.runs[r].len() <= cap {
                    break;
                }
                if tree.levels.len() == i + 1 {
                    tree.levels.push(None);
                }
                let mut m = vec![r];
                m.extend(tree.levels[i + 1].take());
                tree.levels[i] = None;
                let out = merge(&mut chain, &mut tree.runs, &m);
                tree.levels[i + 1] = Some(out);
                i += 1;
                cap *= 10;
            }
        }
        chain.free_empty(&tree.runs);
        let b = chain.bits(&tree.runs);
        sum_bits += b;
        max_bits = max_bits.max(b);
        sum_probes += chain.probes();
        if flush.is_power_of_two() || flush == flushes {
            let entries: u64 = tree.runs.iter().map(Run::len).sum();
            let live_runs = tree.runs.iter().filter(|r| r.len() > 0).count();
            let w = stretch.level(stretch.levels() - 1).unwrap().fingerprint_bits() as f64;
            let sbits = stretch.size_in_bytes() as f64 * 8.0 / stretch.len().max(1) as f64 * (w + 4.0) / w;
            let (sbits, slevels) = if skip_stretch {
                ("—".to_string(), "—".to_string())
            } else {
                (format!("{sbits:.2}"), stretch.levels().to_string())
            };
            println!(
                "| {flush} | {entries} | {live_runs} | {:.2} | {} | {sbits} | {slevels} |",
                chain.bits(&tree.runs),
                chain.probes(),
            );
        }
    }
    let entries: u64 = tree.runs.iter().map(Run::len).sum();
    println!(
        "\nchain, over every flush: bits per entry {:.2} on average, {:.2} at most; {:.2} tables on average; entries moved by merges {} ({:.2} per key inserted)",
        sum_bits / flushes as f64,
        max_bits,
        sum_probes as f64 / flushes as f64,
        chain.moved,
        chain.moved as f64 / entries as f64
    );
}

/// Merges `merged` runs into a new run: its keys in the newest table (moved there from older
/// tables, retargeted where they are already there); the merged runs emptied.
fn merge(chain: &mut Chain, runs: &mut Vec<Run>, merged: &[usize]) -> usize {
    let out = runs.len();
    runs.push(Run { by_table: Vec::new() });
    let newest = chain.newest();
    let mut moving = 0;
    for &r in merged {
        let by = std::mem::take(&mut runs[r].by_table);
        for (t, n) in by.into_iter().enumerate() {
            if t == newest {
                runs[out].by_table.resize(newest + 1, 0);
                runs[out].by_table[newest] += n;
            } else {
                moving += n;
            }
        }
    }
    chain.moved += moving;
    chain.insert(runs, out, moving);
    out
}
