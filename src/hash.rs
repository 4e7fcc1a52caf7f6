//! The persisted hash: key → [`KeyHash`] → (first bucket, fingerprint), and the alternate-bucket
//! involution. Every function here is part of the file format (FORMAT.md, "Hashing"); changing
//! any constant or operation changes which keys a stored filter answers for.

/// The 64-bit hash of a key, computed once and usable with every filter.
///
/// It is XXH3-64 of the key bytes with seed 0 (see FORMAT.md, "Hashing"). It does not depend on a
/// filter's seed: each filter mixes its own seed in when it derives a bucket and a fingerprint,
/// so a store can hash a key once and probe the filters of all its SSTables, whatever their seeds.
///
/// ```
/// use cuckoo_sst::{CuckooFilter, KeyHash};
///
/// let mut a = CuckooFilter::with_capacity(100);
/// let b = CuckooFilter::with_capacity(100);
/// a.insert(b"apple").unwrap();
/// let h = KeyHash::of(b"apple");
/// assert_eq!(h, a.hash_key(b"apple"));
/// assert!(a.contains_hash(h));
/// assert!(!b.contains_hash(h)); // an empty filter contains nothing
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyHash(u64);

impl KeyHash {
    /// Hashes `key` (XXH3-64, seed 0).
    ///
    /// ```
    /// use cuckoo_sst::KeyHash;
    /// // XXH3-64 of the empty input with seed 0, the published test vector.
    /// assert_eq!(KeyHash::of(b"").to_u64(), 0x2D06_8005_38D3_94C2);
    /// ```
    #[inline]
    pub fn of(key: &[u8]) -> KeyHash {
        KeyHash(xxhash_rust::xxh3::xxh3_64(key))
    }

    /// Wraps a 64-bit hash computed elsewhere (it should be well mixed; XXH3 of the key keeps
    /// it compatible with [`KeyHash::of`]).
    ///
    /// ```
    /// use cuckoo_sst::KeyHash;
    /// assert_eq!(KeyHash::from_u64(7).to_u64(), 7);
    /// ```
    #[inline]
    pub const fn from_u64(hash: u64) -> KeyHash {
        KeyHash(hash)
    }

    /// The raw 64-bit value.
    ///
    /// ```
    /// use cuckoo_sst::KeyHash;
    /// assert_eq!(KeyHash::of(b"k").to_u64(), xxhash_rust::xxh3::xxh3_64(b"k"));
    /// ```
    #[inline]
    pub const fn to_u64(self) -> u64 {
        self.0
    }
}

/// MurmurHash3's 64-bit finalizer (`fmix64`): a bijection with full avalanche.
#[inline]
pub(crate) const fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x
}

/// The inverse of [`fmix64`]: `fmix64_inverse(fmix64(x)) == x`.
pub(crate) const fn fmix64_inverse(mut x: u64) -> u64 {
    // x ^= x >> 33 is its own inverse (33 ≥ 64 / 2); odd multipliers have inverses mod 2^64.
    x ^= x >> 33;
    x = x.wrapping_mul(inverse_mod_2_64(0xc4ce_b9fe_1a85_ec53));
    x ^= x >> 33;
    x = x.wrapping_mul(inverse_mod_2_64(0xff51_afd7_ed55_8ccd));
    x ^= x >> 33;
    x
}

/// The multiplicative inverse of an odd `a` modulo 2^64 (Newton's iteration).
const fn inverse_mod_2_64(a: u64) -> u64 {
    let mut x = a; // correct to 3 bits for odd a
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        i += 1;
    }
    x
}

/// The per-filter hash: the key hash mixed with the filter's seed.
#[inline]
pub(crate) const fn seeded(hash: KeyHash, seed: u64) -> u64 {
    fmix64(hash.0 ^ seed)
}

/// Maps a 32-bit value uniformly onto `0..n` by multiply-high (Lemire's fast range), for any
/// `n ≤ 2^32`, with no division.
#[inline]
pub(crate) const fn fast_range32(x: u32, n: u64) -> u64 {
    (x as u64 * n) >> 32
}

/// The first candidate bucket: the high 32 bits of the seeded hash, fast-ranged onto the table.
#[inline]
pub(crate) const fn first_bucket(seeded: u64, num_buckets: u64) -> u64 {
    fast_range32((seeded >> 32) as u32, num_buckets)
}

/// The fingerprint: the low 32 bits of the seeded hash (disjoint from the bucket bits),
/// fast-ranged onto `1..2^bits`, so it is never 0, the empty-slot marker. `bits` is 1..=32.
#[inline]
pub(crate) const fn fingerprint(seeded: u64, bits: u32) -> u32 {
    let max = (u32::MAX >> (32 - bits)) as u64; // 2^bits - 1 nonzero values
    (fast_range32(seeded as u32, max) + 1) as u32
}

/// The alternate bucket of a fingerprint stored in bucket `i`: `(o − i) mod m`, where the
/// table has an even number of buckets `m` and `o = offset(fp)` is odd.
///
/// Why this function: the paper's `i ⊕ hash(fp)` is an involution only when `m` is a power of
/// two, which wastes up to half the memory. Reflecting `i` around a per-fingerprint point,
/// `alt(i) = (o − i) mod m`, is an involution for every `m`: `alt(alt(i)) = o − (o − i) = i`.
/// It needs only the stored fingerprint, so relocation works from the table alone, and the
/// second bucket is uniform because `i` is uniform and independent of `fp`. Making `m` even
/// and `o` odd (Morton filters' odd-offset trick) removes fixed points: `i = o − i (mod m)`
/// would need `2i ≡ o`, an even number equal to an odd one modulo an even `m`. So every key
/// has two distinct buckets (with fixed points, about one key in `m` would have only one, and
/// small tables would fail early). `o = 2·range(φ·fp, m/2) + 1` where `φ·fp` is the top 32 bits
/// of `fp · 0x9E3779B97F4A7C15 mod 2^64` (Fibonacci hashing) and `range` is [`fast_range32`].
#[inline]
pub(crate) fn alt_bucket(i: u64, fp: u32, num_buckets: u64) -> u64 {
    let mixed = ((fp as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32;
    let o = 2 * fast_range32(mixed, num_buckets / 2) + 1;
    // Which case holds is a coin toss for every key: a branch would mispredict half the time
    // (and LLVM turns a plain `if` into one inside lookup loops), so the choice is a select.
    let d = o.wrapping_sub(i);
    std::hint::select_unpredictable(o >= i, d, d.wrapping_add(num_buckets))
}

/// Where a key lives in a classic level: its two candidate buckets and its fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Slot {
    pub(crate) i1: u64,
    pub(crate) i2: u64,
    pub(crate) fp: u32,
    /// The seeded hash, which also seeds the relocation walk.
    pub(crate) seeded: u64,
}

/// The classic derivation (FORMAT.md §2.1): a seeded hash's buckets in a table of
/// `num_buckets` buckets, and its fingerprint of `fp_bits` bits.
#[inline(always)]
pub(crate) fn locate(seeded: u64, num_buckets: u64, fp_bits: u32) -> Slot {
    let i1 = first_bucket(seeded, num_buckets);
    let fp = fingerprint(seeded, fp_bits);
    Slot {
        i1,
        i2: alt_bucket(i1, fp, num_buckets),
        fp,
        seeded,
    }
}

/// The derivation of a *stretch* level (FORMAT.md §2.2): a level that grows one bucket at a
/// time (linear hashing), whose entries keep the hash bits that later address bits come from.
///
/// Everything here depends only on the seeded hash, the level's bucket count `m`, its core
/// width `c` and its continuation width `l0`; a key hashed once serves every stretch level of
/// a file.
pub(crate) mod stretch {
    use super::fmix64;

    /// The widest core a level may have: the offset table holds `2^MAX_CORE_BITS` offsets.
    pub(crate) const MAX_CORE_BITS: u32 = 8;
    /// The narrowest core: the marker must lie below a semi-sorted slot's high nibble.
    pub(crate) const MIN_CORE_BITS: u32 = 4;
    /// Precision sums count each entry as `2^(PRECISION_SCALE − T)` (FORMAT.md §5.1).
    pub(crate) const PRECISION_SCALE: u32 = 60;

    /// The offset `X(core)` that turns a key's first address string into its second:
    /// `fmix64((core + 1) · 0x9E3779B97F4A7C15 mod 2^64) | 1`. Odd, so the two strings differ
    /// in bit 0 and the two buckets always differ.
    pub(crate) const fn offset(core: u64) -> u64 {
        fmix64((core + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1
    }

    const fn build_offsets() -> [u64; 1 << MAX_CORE_BITS] {
        let mut t = [0u64; 1 << MAX_CORE_BITS];
        let mut k = 0;
        while k < t.len() {
            t[k] = offset(k as u64);
            k += 1;
        }
        t
    }

    const fn build_reversed(o: &[u64; 1 << MAX_CORE_BITS]) -> [u64; 1 << MAX_CORE_BITS] {
        let mut t = [0u64; 1 << MAX_CORE_BITS];
        let mut k = 0;
        while k < t.len() {
            t[k] = o[k].reverse_bits();
            k += 1;
        }
        t
    }

    /// [`offset`] of every core.
    static OFFSETS: [u64; 1 << MAX_CORE_BITS] = build_offsets();
    /// The same offsets bit-reversed, for the continuation bits (which a slot stores
    /// most-significant first).
    static OFFSETS_REVERSED: [u64; 1 << MAX_CORE_BITS] = build_reversed(&OFFSETS);

    /// `m`'s linear-hashing state: `K = ⌊log2 m⌋` and the split pointer `s = m − 2^K`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct Split {
        /// `K`; at least 1.
        pub(crate) k: u32,
        /// `s`, below `2^K`.
        pub(crate) s: u64,
    }

    impl Split {
        /// The state of a level of `m ≥ 2` buckets.
        #[inline]
        pub(crate) const fn of(m: u64) -> Split {
            let k = 63 - m.leading_zeros();
            Split { k, s: m - (1 << k) }
        }

        /// The bucket an address string `a` maps to, and its address length: `a mod 2^K`,
        /// or `a mod 2^(K+1)` when that bucket has been split (is below `s`).
        #[inline(always)]
        pub(crate) fn bucket(&self, a: u64) -> (u64, u32) {
            let lo = a & ((1 << self.k) - 1);
            // Split or not is a coin toss for each key: a select, not a branch (which would
            // mispredict, and a lookup takes two of them).
            let split = lo < self.s;
            let bit = (split as u64) << self.k;
            (lo | (a & bit), self.k + split as u32)
        }

        /// The address length of bucket `j` (`K + 1` for split buckets and their images).
        #[inline(always)]
        pub(crate) const fn address_len(&self, j: u64) -> u32 {
            if j < self.s || j >= (1 << self.k) {
                self.k + 1
            } else {
                self.k
            }
        }
    }

    /// A level's slot layout: `p` payload bits above `c` core bits above `l0` continuation
    /// bits and the marker. A filter's slots have no payload (`p = 0`); a run index's carry a
    /// run id there, which every move keeps and a lookup of any run masks out.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct Slots {
        /// `c`, in `MIN_CORE_BITS..=MAX_CORE_BITS`.
        pub(crate) core_bits: u32,
        /// `L0 = w − 1 − c − p ≥ 1`: the most continuation bits a slot holds.
        pub(crate) l0: u32,
        /// `p`: the payload's width.
        pub(crate) payload_bits: u32,
    }

    impl Slots {
        /// The low `l0 + 1` bits of a slot: continuation and marker.
        #[inline(always)]
        pub(crate) const fn field_mask(&self) -> u32 {
            (1 << (self.l0 + 1)) - 1
        }

        /// The marker of an entry with no continuation bit left.
        #[inline(always)]
        pub(crate) const fn bare(&self) -> u32 {
            1 << self.l0
        }

        /// The continuation bits entry `v` holds (`L`; `v` a valid entry).
        #[inline(always)]
        pub(crate) const fn len(&self, v: u32) -> u32 {
            self.l0 - (v & self.field_mask()).trailing_zeros()
        }

        /// The core of entry `v`.
        #[inline(always)]
        pub(crate) const fn core(&self, v: u32) -> u64 {
            ((v >> (self.l0 + 1)) & ((1 << self.core_bits) - 1)) as u64
        }

        /// The lowest bit of the payload.
        #[inline(always)]
        pub(crate) const fn payload_shift(&self) -> u32 {
            self.l0 + 1 + self.core_bits
        }

        /// The payload of entry `v` (0 without one).
        #[inline(always)]
        pub(crate) const fn payload(&self, v: u32) -> u32 {
            ((v as u64) >> self.payload_shift()) as u32
        }

        /// Slot value `q` (no payload) with payload `p` (below `2^payload_bits`).
        #[inline(always)]
        pub(crate) const fn with_payload(&self, q: u32, p: u32) -> u32 {
            q | ((p as u64) << self.payload_shift()) as u32
        }

        /// Whether `v` is a well-formed entry (nonzero, with a marker) or empty.
        #[inline]
        pub(crate) const fn valid(&self, v: u32) -> bool {
            v == 0 || v & self.field_mask() != 0
        }
    }

    /// Where a key lives in a stretch level, and what it looks for there.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct Probe {
        pub(crate) i1: u64,
        pub(crate) i2: u64,
        /// The key's slot value in bucket `i1`: every continuation bit, marker at bit 0.
        pub(crate) q1: u32,
        /// The same in bucket `i2`.
        pub(crate) q2: u32,
        /// The address length of `i1` (for the insert: the new entry's precision).
        pub(crate) l1: u32,
        /// The address length of `i2`.
        pub(crate) l2: u32,
    }

    /// The key's slot value for a bucket of address length `l`: the core, then bits
    /// `l .. l + l0` of its address string (`reversed` is the string bit-reversed) with the
    /// first one highest, then the marker.
    #[inline(always)]
    const fn query(slots: Slots, reversed: u64, core: u64, l: u32) -> u32 {
        let cont = (reversed << l) >> (64 - slots.l0);
        ((core << (slots.l0 + 1)) | (cont << 1) | 1) as u32
    }

    /// The buckets and slot values of the key with seeded hash `h` in a level of state `split`.
    #[inline(always)]
    pub(crate) fn locate(split: Split, slots: Slots, h: u64) -> Probe {
        let core = h >> (64 - slots.core_bits);
        let a2 = h ^ OFFSETS[core as usize];
        let r1 = h.reverse_bits();
        let r2 = r1 ^ OFFSETS_REVERSED[core as usize];
        let (i1, l1) = split.bucket(h);
        let (i2, l2) = split.bucket(a2);
        Probe {
            i1,
            i2,
            q1: query(slots, r1, core, l1),
            q2: query(slots, r2, core, l2),
            l1,
            l2,
        }
    }

    /// What a lookup needs of a level's state, derived once per geometry: [`locate`] for the
    /// lookup path, with the split state's mask and the shifts precomputed and the
    /// continuation bits reversed in 32 bits instead of 64 (issue 40: deriving these per key
    /// made a stretch level's probe cost half again a classic one's).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct Lookup {
        /// `2^K − 1` (`K ≤ 32`).
        kmask: u32,
        /// `s`, below `2^K`.
        s: u32,
        /// `K`.
        k: u8,
        /// `64 − c`: the core is the seeded hash's top `c` bits.
        core_shift: u8,
        /// `31 − L0`: a 32-bit string of continuation bits, first one highest, shifted down
        /// by this leaves `L0` bits above bit 0 (which the marker overwrites).
        cont_shift: u8,
        /// `L0 + 1`: where the core starts in a slot.
        core_pos: u8,
    }

    impl Lookup {
        /// The lookup state of a level of split state `split` and slot layout `slots`.
        pub(crate) const fn of(split: Split, slots: Slots) -> Lookup {
            Lookup {
                kmask: ((1u64 << split.k) - 1) as u32,
                s: split.s as u32,
                k: split.k as u8,
                core_shift: (64 - slots.core_bits) as u8,
                cont_shift: (31 - slots.l0) as u8,
                core_pos: (slots.l0 + 1) as u8,
            }
        }

        /// The bucket of address string `a`, and 1 if it is a split bucket (its address is
        /// `K + 1` bits long), else 0.
        #[inline(always)]
        fn bucket(&self, a: u64) -> (u64, u32) {
            let lo = a & self.kmask as u64;
            let split = lo < self.s as u64;
            (lo | (a & ((split as u64) << self.k)), split as u32)
        }

        /// The lowest bit of a slot's payload ([`Slots::payload_shift`]).
        #[inline(always)]
        pub(crate) const fn payload_shift(&self) -> u32 {
            self.core_pos as u32 + (64 - self.core_shift as u32)
        }

        /// [`locate`]'s `(i1, q1, i2, q2)`.
        #[inline(always)]
        pub(crate) fn locate(&self, h: u64) -> (u64, u32, u64, u32) {
            let core = h >> self.core_shift;
            let c = core as usize & ((1 << MAX_CORE_BITS) - 1);
            let a2 = h ^ OFFSETS[c];
            // Bits K.. of each string, the first one highest: the continuation bits of a
            // bucket of address length K are the top L0, of K + 1 the L0 after the first.
            let r1 = ((h >> self.k) as u32).reverse_bits();
            let r2 = r1 ^ ((OFFSETS_REVERSED[c] << self.k) >> 32) as u32;
            let (i1, e1) = self.bucket(h);
            let (i2, e2) = self.bucket(a2);
            let hi = ((core as u32) << self.core_pos) | 1;
            let q1 = hi | ((r1 << e1) >> self.cont_shift);
            let q2 = hi | ((r2 << e2) >> self.cont_shift);
            (i1, q1, i2, q2)
        }
    }

    /// The two buckets of the key with seeded hash `h` ([`locate`]'s `i1` and `i2`, without
    /// the slot values).
    #[inline(always)]
    pub(crate) fn buckets(split: Split, slots: Slots, h: u64) -> [u64; 2] {
        let core = h >> (64 - slots.core_bits);
        [
            split.bucket(h).0,
            split.bucket(h ^ OFFSETS[core as usize]).0,
        ]
    }

    /// Whether the stored entry `v` answers for the key whose slot value is `q`: `v` is not
    /// empty and agrees with `q` on every bit above its marker.
    #[inline(always)]
    pub(crate) const fn matches(v: u32, q: u32) -> bool {
        v != 0 && (v ^ q) & !(v ^ v.wrapping_sub(1)) == 0
    }

    /// The bucket [`relocate`] would move entry `v` of bucket `j` (of address length `l`)
    /// to, computed without the entry's new value (the search for a free slot only needs
    /// where each entry could go).
    #[inline(always)]
    pub(crate) fn target(split: Split, slots: Slots, v: u32, j: u64, l: u32) -> Option<u64> {
        let x = OFFSETS[slots.core(v) as usize & ((1 << MAX_CORE_BITS) - 1)];
        let a = (j ^ x) & ((1 << l) - 1);
        let lo = a & ((1 << split.k) - 1);
        if lo >= split.s {
            return Some(lo);
        }
        if l > split.k {
            return Some(a);
        }
        let field = v & slots.field_mask();
        if field == slots.bare() {
            return None;
        }
        // The other string's bit l: the entry's first continuation bit XOR the offset's.
        let bit = ((field >> slots.l0) as u64 ^ (x >> l)) & 1;
        Some(lo | bit << split.k)
    }

    /// Entry `v` of bucket `j` moved to its other bucket in a level of state `split`: the
    /// bucket and the entry's value there, or `None` when the move needs an address bit the
    /// entry no longer holds. The second value is `true` when the move dropped the entry's
    /// last continuation bit (its precision fell by one).
    #[inline]
    pub(crate) fn relocate(split: Split, slots: Slots, v: u32, j: u64) -> Option<(u64, u32, bool)> {
        let l = split.address_len(j);
        let core = slots.core(v);
        let fm = slots.field_mask();
        let field = v & fm;
        // The other address string: the known address bits, and the continuation bits (above
        // the marker), each XOR the offset's.
        let a = j ^ (OFFSETS[core as usize] & ((1 << l) - 1));
        let offset_cont = (((OFFSETS_REVERSED[core as usize] << l) >> (64 - slots.l0)) << 1) as u32;
        let above_marker = !(field ^ field.wrapping_sub(1)) & fm;
        let field = field ^ (offset_cont & above_marker);
        let (target, field, dropped) = retarget(split, slots, a, l, field)?;
        // Everything above the field (the core, and the payload) stays.
        Some((target, (v & !fm) | field, dropped))
    }

    /// An entry whose address string's low `l` bits are `a`, with continuation `field`, placed
    /// in the bucket `split` maps it to: takes its next continuation bit as an address bit
    /// (`None` when it has none left) or gives the top address bit back to the continuation
    /// (dropping the last continuation bit if the slot is full).
    #[inline]
    pub(crate) const fn retarget(
        split: Split,
        slots: Slots,
        a: u64,
        l: u32,
        field: u32,
    ) -> Option<(u64, u32, bool)> {
        let fm = slots.field_mask();
        let lo = a & ((1 << split.k) - 1);
        let need = if lo < split.s { split.k + 1 } else { split.k };
        if need == l {
            return Some((a, field, false));
        }
        if need == l + 1 {
            if field == slots.bare() {
                return None;
            }
            let bit = ((field >> slots.l0) & 1) as u64;
            return Some((a | bit << l, (field << 1) & fm, false));
        }
        // need == l − 1: the address bit l − 1 goes back to the top of the continuation.
        let bit = ((a >> (l - 1)) & 1) as u32;
        let full = field & 1 == 1;
        let field = (field >> 1) | (bit << slots.l0) | full as u32;
        Some((a & ((1 << (l - 1)) - 1), field, full))
    }
}

/// The deterministic generator of the relocation walk: SplitMix64.
///
/// Seeded from the key's seeded hash, so a table's bytes depend only on the seed and the
/// sequence of operations — also across save and reopen — never on a hidden state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) const fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n ≤ 2^32`).
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        fast_range32((self.next_u64() >> 32) as u32, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh3_test_vectors_are_stable() {
        // Published XXH3-64 vectors (seed 0); a dependency update that changed them would
        // silently break every stored filter.
        assert_eq!(KeyHash::of(b"").to_u64(), 0x2D06_8005_38D3_94C2);
        assert_eq!(KeyHash::of(b"a").to_u64(), 0xE6C6_32B6_1E96_4E1F);
        assert_eq!(KeyHash::of(b"abc").to_u64(), 0x78AF_5F94_892F_3950);
    }

    #[test]
    fn alt_bucket_is_an_involution_for_every_table_size() {
        let mut rng = SplitMix64::new(1);
        for m in (2..600u64)
            .step_by(2)
            .chain([1 << 16, 1_000_002, (1 << 32) - 2, 1 << 32])
        {
            for _ in 0..2_000 {
                let i = rng.below(m);
                let fp = (rng.next_u64() as u32).max(1);
                let j = alt_bucket(i, fp, m);
                assert!(j < m, "alt {j} out of range for m={m}");
                assert_ne!(j, i, "fixed point for m={m} fp={fp}");
                assert_eq!(alt_bucket(j, fp, m), i, "m={m} i={i} fp={fp}");
            }
        }
    }

    #[test]
    fn alt_bucket_is_exhaustively_an_involution_on_small_tables() {
        for m in (2..128u64).step_by(2) {
            for i in 0..m {
                for fp in 1..=1024u32 {
                    let j = alt_bucket(i, fp, m);
                    assert!(j < m && j != i);
                    assert_eq!(alt_bucket(j, fp, m), i);
                }
            }
        }
    }

    #[test]
    fn fingerprint_is_never_zero_and_stays_in_width() {
        for bits in 1..=32u32 {
            let max = if bits == 32 {
                u32::MAX
            } else {
                (1u32 << bits) - 1
            };
            for low in [0u64, 1, 2, 0xFFFF_FFFF, 0x8000_0000, 0x7FFF_FFFF, 12345] {
                let fp = fingerprint(low, bits);
                assert!(fp >= 1 && fp <= max, "bits={bits} low={low:#x} fp={fp}");
            }
        }
        // The extremes of the low word map onto the extremes of the range.
        assert_eq!(fingerprint(0, 8), 1);
        assert_eq!(fingerprint(0xFFFF_FFFF, 8), 255);
        assert_eq!(fingerprint(0xFFFF_FFFF, 32), u32::MAX);
    }

    #[test]
    fn fingerprint_is_uniform_over_its_range() {
        // 8-bit fingerprints of 255 · 4000 hashes. Each value's count is binomial with mean
        // 4000 and σ ≈ 63: every count within 5σ, and Pearson's χ² over the 255 values (254
        // degrees of freedom: mean 254, σ ≈ 22.5) within 5σ of its mean. A fingerprint that
        // used only 7 bits, or favoured some values by 10 %, fails both.
        let mut counts = [0u32; 256];
        let mut rng = SplitMix64::new(9);
        let n = 255 * 4000;
        for _ in 0..n {
            counts[fingerprint(rng.next_u64(), 8) as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        let mean = 4000.0;
        let sigma = (n as f64 * (1.0 / 255.0) * (254.0 / 255.0)).sqrt();
        let mut chi2 = 0.0;
        for (v, &c) in counts.iter().enumerate().skip(1) {
            let d = c as f64 - mean;
            assert!(d.abs() <= 5.0 * sigma, "fingerprint {v} seen {c} times");
            chi2 += d * d / mean;
        }
        let dof = 254.0f64;
        assert!(
            (chi2 - dof).abs() <= 5.0 * (2.0 * dof).sqrt(),
            "chi-square {chi2} for {dof} degrees of freedom"
        );
    }

    #[test]
    fn bucket_and_fingerprint_bits_are_disjoint() {
        // Changing only the low word never moves the bucket; changing only the high word
        // never changes the fingerprint.
        let m = 1_000_003;
        let h = 0x1234_5678_9ABC_DEF0u64;
        assert_eq!(first_bucket(h, m), first_bucket(h ^ 0xFFFF_FFFF, m));
        assert_eq!(
            fingerprint(h, 16),
            fingerprint(h ^ 0xFFFF_FFFF_0000_0000, 16)
        );
    }

    #[test]
    fn fmix64_inverse_inverts() {
        let mut rng = SplitMix64::new(3);
        for x in [0, 1, u64::MAX, 1 << 63]
            .into_iter()
            .chain((0..10_000).map(|_| rng.next_u64()))
        {
            assert_eq!(fmix64_inverse(fmix64(x)), x);
            assert_eq!(fmix64(fmix64_inverse(x)), x);
        }
    }

    /// FORMAT.md §2's worked example, number by number.
    #[test]
    fn format_md_worked_example() {
        let h = seeded(KeyHash::of(b""), 0);
        assert_eq!(h, 0x0E9E_BEFF_1EBD_5806);
        let (m, f) = (1000, 10);
        assert_eq!(first_bucket(h, m), 57);
        assert_eq!(fingerprint(h, f), 123);
        assert_eq!(
            (123u64.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32,
            0x04A7_7C20
        );
        assert_eq!(2 * fast_range32(0x04A7_7C20, m / 2) + 1, 19);
        assert_eq!(alt_bucket(57, 123, m), 962);
        assert_eq!(alt_bucket(962, 123, m), 57);
        // The wrapping computation FORMAT.md warns about.
        assert_eq!(19u64.wrapping_sub(57) % m, 578);
    }

    /// FORMAT.md §2.2's worked example, number by number.
    #[test]
    fn format_md_stretch_worked_example() {
        use stretch::*;
        let h = seeded(KeyHash::of(b""), 0);
        let split = Split::of(1000);
        assert_eq!(split, Split { k: 9, s: 488 });
        let slots = Slots {
            core_bits: 5,
            l0: 8,
            payload_bits: 0,
        };
        assert_eq!(h >> 59, 1);
        assert_eq!(offset(1), 0xD30B_0542_6513_3DD7);
        assert_eq!(h ^ offset(1), 0xDD95_BBBD_7BAE_65D1);
        let p = locate(split, slots, h);
        assert_eq!((p.i1, p.l1, p.q1), (6, 10, 0x2D5));
        assert_eq!((p.i2, p.l2, p.q2), (465, 10, 0x333));
        assert!(matches(0x2D5, p.q1));
        assert!(matches(0x2E0, p.q1));
        assert!(!matches(0x240, p.q1));
        assert_eq!(
            (slots.len(0x2D5), slots.len(0x2E0), slots.len(0x240)),
            (8, 3, 2)
        );
    }

    /// Moving an entry to its other bucket and back gives the entry back (when no bit had to
    /// be dropped), and the moved entry answers for the same keys in its new bucket: for every
    /// split state of small levels, random keys, every continuation length.
    #[test]
    fn the_lookup_state_locates_as_the_derivation_does() {
        // `Lookup` (the lookup path's form, reversing 32 bits) against `locate` (64), at
        // every core width and continuation width a slot of up to 32 bits has, and bucket
        // counts from 2 to 2^32: the split pointer at 0, inside and at the end of a doubling.
        use stretch::*;
        let mut rng = SplitMix64::new(40);
        let mut ms: Vec<u64> = (2..70).collect();
        for k in 6..=32u32 {
            let lo = 1u64 << k;
            ms.extend([lo, lo + 1, lo + lo / 3, (lo << 1) - 1]);
        }
        ms.retain(|&m| m <= 1 << 32);
        for &m in &ms {
            let split = Split::of(m);
            for c in MIN_CORE_BITS..=MAX_CORE_BITS {
                for l0 in 1..=(31 - c) {
                    let slots = Slots {
                        core_bits: c,
                        l0,
                        payload_bits: 0,
                    };
                    let lookup = Lookup::of(split, slots);
                    for _ in 0..8 {
                        let h = rng.next_u64();
                        let p = locate(split, slots, h);
                        assert_eq!(
                            lookup.locate(h),
                            (p.i1, p.q1, p.i2, p.q2),
                            "m={m} c={c} l0={l0} h={h:#x}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn stretch_relocation_is_an_involution_and_keeps_the_answers() {
        // Without a payload (a filter's slots), and with one (a run index's: the run id above
        // the core, which every move keeps).
        use stretch::*;
        let mut rng = SplitMix64::new(41);
        for m in 2..300u64 {
            let split = Split::of(m);
            for (c, l0, pb) in [(4, 3, 0), (5, 8, 0), (8, 1, 0), (5, 6, 4), (4, 3, 7)] {
                let slots = Slots {
                    core_bits: c,
                    l0,
                    payload_bits: pb,
                };
                for _ in 0..50 {
                    let h = rng.next_u64();
                    let pay = (rng.next_u64() & ((1 << pb) - 1)) as u32;
                    let p = locate(split, slots, h);
                    assert_ne!(p.i1, p.i2);
                    assert_eq!(buckets(split, slots, h), [p.i1, p.i2]);
                    let (q1, q2) = (slots.with_payload(p.q1, pay), slots.with_payload(p.q2, pay));
                    for keep in 0..=l0 {
                        // The key's entry in i1 with `keep` continuation bits.
                        let cut = l0 - keep;
                        let v = (q1 >> (cut + 1) << (cut + 1)) | 1 << cut;
                        assert!(matches(v, q1));
                        assert_eq!(slots.payload(v), pay);
                        assert_eq!(slots.core(v), h >> (64 - c));
                        let Some((j, w, dropped)) = relocate(split, slots, v, p.i1) else {
                            assert_eq!(keep, 0, "only a bare entry cannot move");
                            let l = split.address_len(p.i1);
                            assert_eq!(target(split, slots, v, p.i1, l), None);
                            continue;
                        };
                        assert_eq!(j, p.i2, "m={m} c={c} l0={l0}");
                        let l = split.address_len(p.i1);
                        assert_eq!(target(split, slots, v, p.i1, l), Some(j));
                        assert!(matches(w, q2), "m={m} c={c} l0={l0} keep={keep}");
                        assert_eq!(slots.payload(w), pay, "a move keeps the payload");
                        // The precision (address length and continuation bits) is kept, or
                        // falls by one when the move dropped the last continuation bit.
                        assert_eq!(
                            split.address_len(j) + slots.len(w),
                            split.address_len(p.i1) + keep - u32::from(dropped),
                            "m={m} c={c} l0={l0} keep={keep}"
                        );
                        if !dropped {
                            assert_eq!(relocate(split, slots, w, j), Some((p.i1, v, false)));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn first_bucket_covers_the_table() {
        let m = 7u64;
        assert_eq!(first_bucket(0, m), 0);
        assert_eq!(first_bucket(u64::MAX, m), m - 1);
        assert_eq!(first_bucket(u64::MAX, 1 << 32), (1 << 32) - 1);
    }

    /// SplitMix64's published sequence from seed 0: a table's bytes depend on the walk it
    /// drives, so its numbers are part of the format.
    #[test]
    fn splitmix64_gives_the_reference_sequence() {
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(rng.next_u64(), 0x06C4_5D18_8009_454F);
    }

    /// `below(n)` is the high half of the next number fast-ranged onto `0..n`: within range,
    /// every value drawn, the same draw as the next number's.
    #[test]
    fn splitmix64_below_covers_its_range() {
        let mut rng = SplitMix64::new(5);
        let mut copy = rng;
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            let v = rng.below(10);
            assert_eq!(v, fast_range32((copy.next_u64() >> 32) as u32, 10));
            seen[v as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    }

    /// A slot is empty (0) or an entry with a marker somewhere in its continuation field; a
    /// core above an empty field is not an entry.
    #[test]
    fn stretch_slots_tell_entries_from_damage() {
        use stretch::*;
        let slots = Slots {
            core_bits: 5,
            l0: 8,
            payload_bits: 0,
        };
        assert_eq!(slots.field_mask(), 0x1FF);
        assert!(slots.valid(0));
        for core in 0..32u32 {
            assert_eq!(slots.valid(core << 9), core == 0, "core {core}");
            for marker in 0..=8 {
                // The marker at bit `marker`, every continuation bit above it set.
                let v = (core << 9) | ((0x1FF << marker) & 0x1FF);
                assert!(slots.valid(v), "{v:#x}");
                assert_eq!(slots.len(v), 8 - marker);
                assert_eq!(slots.core(v), core as u64);
            }
        }
    }
}
