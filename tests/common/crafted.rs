//! Distinct keys that a stretch level cannot tell apart, keys that fill one bucket pair without
//! answering for each other, and the helper that uses the latter to start a new level of a
//! growable filter.
//!
//! A growable filter starts a new level when its newest level cannot take a key. Copies of one
//! key never do that: a key the level answers for is counted on an answering entry (FORMAT.md
//! §3.5), and past `2b` copies refused with `Error::TooManyCopies`. Keys that share everything
//! the level stores of them (both buckets and both query values, §2.2: [`Stretch::crafted`])
//! are copies as far as the level can tell. But `2b + 1` keys that share both buckets and the
//! core and differ in the last continuation bits ([`Stretch::distinct`]) fill their pair with
//! entries that answer for none of the others and cannot leave it (their other bucket is the
//! pair's other one), so the level cannot take the last, and a new level does. Both make key
//! hashes from the format alone, through the public `insert_hash`: they change bits of the
//! *seeded* hash and map them back through the inverse of the seed mix (§2).
//!
//! Everything here follows FORMAT.md (through [`super::spec`], the reader written from it) and
//! the crate's public API; nothing depends on the crate's internals.

use super::spec;
use cuckoo_sst::{FilterRef, KeyHash, ScalableCuckooFilter};

/// The core width of every stretch level the crate creates (FORMAT.md §8: "a new chain has one
/// stretch level with `c = 5`"; later levels alike).
pub const CORE_BITS: u32 = 5;

/// The inverse of an odd number modulo 2^64 (Newton's iteration).
fn inverse(a: u64) -> u64 {
    let mut x = a; // correct to 3 bits
    for _ in 0..5 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    assert_eq!(a.wrapping_mul(x), 1);
    x
}

/// The inverse of `fmix64` (FORMAT.md §2): each step of it — `x ^= x >> 33` and a product with
/// an odd constant mod 2^64 — is a bijection, undone in reverse order.
pub fn fmix64_inverse(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(inverse(0xC4CE_B9FE_1A85_EC53));
    x ^= x >> 33;
    x = x.wrapping_mul(inverse(0xFF51_AFD7_ED55_8CCD));
    x ^= x >> 33;
    x
}

/// The key hash whose seeded hash under `seed` is `h`: `H = fmix64⁻¹(h) XOR S` (§2).
pub fn unseeded(h: u64, seed: u64) -> KeyHash {
    KeyHash::from_u64(fmix64_inverse(h) ^ seed)
}

/// FORMAT.md §2.2: a stretch level of `m` buckets, `w`-bit slots and `c`-bit cores, under seed
/// `seed` — what a key hash's place in it is.
#[derive(Clone, Copy, Debug)]
pub struct Stretch {
    pub seed: u64,
    pub m: u64,
    pub w: u32,
    pub c: u32,
}

impl Stretch {
    /// A level of a growable filter the crate made (its core width is [`CORE_BITS`]).
    pub fn of(seed: u64, view: FilterRef<'_>) -> Stretch {
        Stretch {
            seed,
            m: view.num_buckets() as u64,
            w: view.fingerprint_bits(),
            c: CORE_BITS,
        }
    }

    /// The newest level of `chain`.
    pub fn newest(chain: &ScalableCuckooFilter) -> Stretch {
        Stretch::of(chain.seed(), chain.level(chain.levels() - 1).unwrap())
    }

    /// `(i1, q1, i2, q2)` of a key hash: everything the level stores of the key.
    pub fn place(&self, hash: u64) -> (u64, u32, u64, u32) {
        let h = spec::seeded(hash, self.seed);
        let [(i1, _, q1), (i2, _, q2)] =
            spec::stretch_probes(h, self.m, self.c as u64, self.w as u64);
        (i1, q1 as u32, i2, q2 as u32)
    }

    /// `n` distinct key hashes that the level cannot tell apart from `hash`: they differ only
    /// in bits 48..56 of the seeded hash, which neither the buckets, the continuation (address
    /// bits below `ℓ + L0 ≤ 48` for levels under 2^24 buckets) nor the core read. The first
    /// is `hash` itself.
    pub fn crafted(&self, hash: u64, n: usize) -> Vec<KeyHash> {
        assert!(n <= 256, "bits 48..56 give 256 distinct hashes");
        let h = spec::seeded(hash, self.seed);
        let v: Vec<KeyHash> = (0..n as u64)
            .map(|k| unseeded(h ^ (k << 48), self.seed))
            .collect();
        for x in &v {
            assert_eq!(self.place(x.to_u64()), self.place(hash), "{self:?}");
        }
        v
    }

    /// `n ≤ 32` distinct key hashes with the buckets and core of `hash` whose entries answer
    /// for none of the others: they differ in the last five continuation bits of both address
    /// strings (bits `K + L0 − 5 .. K + L0` of the seeded hash, `K = ⌊log2 m⌋`, which both
    /// strings' continuations hold whether their bucket is split or not), so their query
    /// values differ in both buckets, while the first continuation bits, which the next splits
    /// of their buckets read, are the same. The first is `hash` itself.
    pub fn distinct(&self, hash: u64, n: usize) -> Vec<KeyHash> {
        assert!(n <= 32, "five bits give 32 distinct tails");
        let k = 63 - self.m.leading_zeros();
        let l0 = self.w - 1 - self.c;
        assert!(l0 >= 6, "{self:?}: too few continuation bits");
        let shift = k + l0 - 5;
        let h = spec::seeded(hash, self.seed);
        let base = h & !(0x1F << shift);
        let first = (h >> shift) & 0x1F;
        let v: Vec<KeyHash> = (0..n as u64)
            .map(|t| unseeded(base | ((first ^ t) << shift), self.seed))
            .collect();
        let (i1, q1, i2, q2) = self.place(hash);
        let core = |q: u32| q >> (l0 + 1);
        let mut values = std::collections::HashSet::new();
        for x in &v {
            let (j1, r1, j2, r2) = self.place(x.to_u64());
            assert_eq!((j1, j2), (i1, i2), "{self:?}");
            assert_eq!((core(r1), core(r2)), (core(q1), core(q2)), "{self:?}");
            assert!(values.insert((r1, r2)), "{self:?}: two with one value");
        }
        v
    }
}

/// The slots of the two buckets of the key with hash `h` in level `k` of the file `bytes`, read
/// by the reader written from FORMAT.md (§2.2, §3), each with whether it answers for the key:
/// `[(slot value, answers); 2b]`.
pub fn pair_slots(bytes: &[u8], k: usize, h: KeyHash) -> Vec<(u64, bool)> {
    let file = spec::read_unverified(bytes).unwrap();
    let level = &file.levels[k];
    assert!(level.is_stretch());
    let probes = level.probes(spec::seeded(h.to_u64(), file.seed));
    probes
        .iter()
        .flat_map(|&(i, q)| {
            level
                .bucket(i)
                .into_iter()
                .map(move |v| (v, spec::answers(v, q, level.f)))
        })
        .collect()
}

/// Starts a new level of `chain` with distinct keys, never with copies of one: inserts, one by
/// one, key hashes ([`Stretch::distinct`], up to 32 of a class, up to four classes) with one
/// bucket pair and core in the
/// newest level (`b` its bucket size) that answer for none of each other — and that no level
/// answers for (such a key would be counted as a copy where it is found) — until one of them
/// goes to a new level: the `2b + 1`-th once `2b` have filled their two buckets, an earlier
/// one when the pair also holds entries of other keys of their core that cannot leave it, or a
/// later one when the splits an insert makes before it gives up finish a doubling of a small
/// level (the first continuation bit, which the keys share, then becomes an address bit, and
/// the next one, in which they may differ, the first).
/// Asserts that exactly one level was added, that it holds exactly the last of them, that
/// every one inserted is found and counted in `len`, and that the level before refused the
/// last because the pair was full: every slot of its two buckets occupied by an entry of the
/// keys' core, none answering for the last. (When the newest level is a classic one, from a
/// version-1 or -2 file, the first key starts a level.) Returns the hashes inserted, in
/// order, so that a caller can account for them.
///
/// The hashes are a function of the chain's seed, levels and length, so that the same
/// sequence of operations gives the same hashes (and bytes) every time, and successive calls
/// use different hashes.
pub fn start_new_level(chain: &mut ScalableCuckooFilter) -> Vec<KeyHash> {
    let (levels, len) = (chain.levels(), chain.len());
    let b = chain.level(levels - 1).unwrap().bucket_size();
    let mut inserted = Vec::new();
    // A class whose keys the level's splits tell apart before their pair closes (a small
    // level) is followed by another, from the level as it then is: at most four.
    for class in 0..4 {
        let base = match class {
            0 => KeyHash::of(format!("start_new_level: {levels} levels, {len} keys").as_bytes()),
            c => {
                KeyHash::of(format!("start_new_level: {levels} levels, {len} keys, {c}").as_bytes())
            }
        };
        // Each is asked first: one the chain answers for is skipped (an entry of another that
        // a move made less precise may answer for it).
        for h in Stretch::newest(chain).distinct(base.to_u64(), 32) {
            if chain.contains_hash(h) {
                continue;
            }
            match chain.insert_hash(h) {
                Ok(()) => inserted.push(h),
                Err(e) => panic!(
                    "crafted key {} ({}, b = {b}): {e:?} ({levels} levels, {len} keys)",
                    inserted.len() + 1,
                    class
                ),
            }
            if chain.levels() > levels {
                break;
            }
        }
        if chain.levels() > levels {
            break;
        }
    }
    assert_eq!(
        chain.levels(),
        levels + 1,
        "{} distinct crafted keys did not start a level",
        inserted.len()
    );
    assert_eq!(chain.len(), len + inserted.len());
    assert!(inserted.iter().all(|&h| chain.contains_hash(h)));
    let new = chain.level(levels).unwrap();
    assert_eq!(
        new.len(),
        1,
        "the new level holds the last crafted key alone"
    );
    let last = *inserted.last().unwrap();
    assert!(new.contains_hash(last));
    let bytes = chain.to_bytes();
    if !spec::read_unverified(&bytes).unwrap().levels[levels - 1].is_stretch() {
        // A classic newest level (a chain from a version-1 or -2 file) takes no key: the
        // first one starts a stretch level (FORMAT.md §8).
        assert_eq!(inserted.len(), 1);
        return inserted;
    }
    // The level before refused it for a full pair of entries of its core, none answering.
    let pair = pair_slots(&bytes, levels - 1, last);
    assert_eq!(pair.len(), 2 * b);
    assert!(pair.iter().all(|&(v, _)| v != 0), "{pair:x?}: not full");
    assert!(pair.iter().all(|&(_, a)| !a), "{pair:x?}: an entry answers");
    inserted
}
