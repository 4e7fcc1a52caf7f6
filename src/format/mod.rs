//! The file format (FORMAT.md): constants and the size of an encoded filter.

/// Bytes of the file header.
pub(crate) const HEADER_LEN: usize = 64;
/// Bytes of one level descriptor.
pub(crate) const LEVEL_LEN: usize = 64;

/// Bytes of a file holding one level whose bucket region is `table_bytes` long.
pub(crate) const fn file_len(table_bytes: usize) -> usize {
    HEADER_LEN + LEVEL_LEN + table_bytes
}
