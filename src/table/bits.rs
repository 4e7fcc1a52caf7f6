//! Little-endian bit fields in a byte region: bit `p` is bit `p mod 8` of byte `p / 8`
//! (FORMAT.md §3). A field of at most 57 bits is read or written through the 8-byte window
//! that starts at its first byte; a whole bucket of at most 121 bits is read with one 16-byte
//! load ([`read_wide`]). The region keeps 16 bytes of slack after its last bucket for them.

/// The 8 bytes at `at` as a little-endian `u64`.
#[inline(always)]
fn load(t: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&t[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The `width`-bit field (`width ≤ 57`) that starts at bit `pos`.
#[inline(always)]
pub(crate) fn read(t: &[u8], pos: u64, width: u32) -> u64 {
    (load(t, (pos >> 3) as usize) >> (pos & 7)) & mask(width)
}

/// Writes `value` (which fits in `width ≤ 57` bits) into the field that starts at bit `pos`.
#[inline(always)]
pub(crate) fn write(t: &mut [u8], pos: u64, width: u32, value: u64) {
    let at = (pos >> 3) as usize;
    let shift = pos & 7;
    let m = mask(width) << shift;
    let w = (load(t, at) & !m) | ((value << shift) & m);
    t[at..at + 8].copy_from_slice(&w.to_le_bytes());
}

/// The `width ≤ 121` bits starting at bit `pos`, with one 16-byte load. The load starts at
/// the field's first byte, or earlier if that keeps it inside the 64-byte line holding the
/// field's last byte — so a bucket that lies within one cache line is read from that line
/// alone (region offsets are taken as line offsets: regions are 64-byte aligned).
#[inline(always)]
pub(crate) fn read_wide(t: &[u8], pos: u64, width: u32) -> u128 {
    let first = (pos >> 3) as usize;
    let last = ((pos + width as u64 - 1) >> 3) as usize;
    let at = first.min((last | 63) - 15);
    let (lo, hi) = (load(t, at), load(t, at + 8));
    // Shift the 128-bit window right by `shift` (0..=127) without a branch on the amount,
    // which depends on the key: `u128 >> n` compiles to a branch on n ≥ 64 that the CPU
    // mispredicts about half the time.
    let shift = pos - 8 * at as u64;
    let upper = 0u64.wrapping_sub(shift >> 6); // all ones when shift ≥ 64
    let a = (hi & upper) | (lo & !upper);
    let b = hi & !upper;
    let s = (shift & 63) as u32;
    let low = (a >> s) | ((b << 1) << (63 - s));
    let high = b >> s;
    ((high as u128) << 64 | low as u128) & ((1u128 << width) - 1)
}

/// The `width ≤ 57` bits starting at bit `pos`, with one 8-byte load kept, like
/// [`read_wide`]'s, inside the line of the field's last byte when the field allows it.
#[inline(always)]
pub(crate) fn read_narrow(t: &[u8], pos: u64, width: u32) -> u64 {
    let first = (pos >> 3) as usize;
    let last = ((pos + width as u64 - 1) >> 3) as usize;
    let at = first.min((last | 63) - 7);
    (load(t, at) >> (pos - 8 * at as u64)) & mask(width)
}

/// The widest field [`read_narrow`] reads.
pub(crate) const NARROW_BITS: u32 = 57;

/// The widest field [`read_wide`] reads.
pub(crate) const WIDE_BITS: u32 = 121;

/// The byte range a bucket read of `width` bits at bit `pos` loads: [`read_narrow`]'s for up to
/// 57 bits, [`read_wide`]'s for up to 121.
pub(crate) fn load_span(pos: u64, width: u32) -> (u64, u64) {
    let first = pos >> 3;
    let last = (pos + width as u64 - 1) >> 3;
    let len = if width <= NARROW_BITS { 8 } else { 16 };
    (first.min((last | 63) - (len - 1)), len)
}

/// A bucket's bits in a machine word, from which its fields are cut.
pub(crate) trait Word: Copy {
    /// The `width`-bit field at bit `offset` (`offset + width` within the word).
    fn field(self, offset: u32, width: u32) -> u32;
}

impl Word for u64 {
    #[inline(always)]
    fn field(self, offset: u32, width: u32) -> u32 {
        ((self >> offset) & mask(width)) as u32
    }
}

impl Word for u128 {
    #[inline(always)]
    fn field(self, offset: u32, width: u32) -> u32 {
        ((self >> offset) as u64 & mask(width)) as u32
    }
}

#[inline(always)]
const fn mask(width: u32) -> u64 {
    (1u64 << width) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_at_every_offset_and_width() {
        for width in 1..=57u32 {
            for pos in 0..80u64 {
                let mut t = vec![0xA5u8; 24];
                let before = t.clone();
                let v = 0x0123_4567_89AB_CDEFu64 & mask(width);
                write(&mut t, pos, width, v);
                assert_eq!(read(&t, pos, width), v, "width {width} pos {pos}");
                // Bits outside the field are untouched.
                for bit in (0..24 * 8).filter(|&b| b < pos || b >= pos + width as u64) {
                    let (byte, off) = ((bit / 8) as usize, bit % 8);
                    assert_eq!((t[byte] >> off) & 1, (before[byte] >> off) & 1, "bit {bit}");
                }
            }
        }
    }

    #[test]
    fn wide_reads_match_bitwise_reads_and_stay_in_the_line() {
        let t: Vec<u8> = (0..400u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for width in [1u32, 12, 36, 57, 64, 100, 121] {
            for pos in 0..(384 - 16 - 121) * 8u64 {
                let want = (0..width).fold(0u128, |acc, j| {
                    let p = pos + j as u64;
                    acc | (((t[(p / 8) as usize] >> (p % 8)) & 1) as u128) << j
                });
                assert_eq!(read_wide(&t, pos, width), want, "width {width} pos {pos}");
                if width <= NARROW_BITS {
                    assert_eq!(
                        read_narrow(&t, pos, width) as u128,
                        want,
                        "narrow {width} {pos}"
                    );
                }
                let (at, len) = load_span(pos, width);
                let last = (pos + width as u64 - 1) / 8;
                assert!(at <= pos / 8 && last < at + len, "the load holds the field");
                if pos / 8 / 64 == last / 64 {
                    assert_eq!(at / 64, last / 64, "a one-line field read across lines");
                    assert_eq!((at + len - 1) / 64, last / 64);
                }
            }
        }
    }

    #[test]
    fn bit_order_is_little_endian() {
        let mut t = vec![0u8; 16];
        write(&mut t, 3, 10, 0b11_0000_0001);
        // Bit 3 of byte 0 is the field's lowest bit; its top two bits are bits 11, 12.
        assert_eq!(t[0], 0b0000_1000);
        assert_eq!(t[1], 0b0001_1000);
    }
}
