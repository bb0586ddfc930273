//! What a decoder's error means for the user: the `image` crate's errors mapped onto the
//! tool's input errors, in words. The PNG decoder names a chunk by its Rust debug form
//! (`ChunkType { type: IDAT, critical: true, .. }`); the messages name it by its four letters,
//! and a checksum that does not match says which chunk is damaged.

use image::ImageError;

use super::{InputError, MAX_BYTES_PER_PIXEL};

/// Maps a decoder's error onto what it means for the user.
pub(super) fn classify(e: ImageError) -> InputError {
    match e {
        ImageError::Limits(l) => InputError::TooLarge(format!(
            "decoding needs more memory than the decoder's limit of {MAX_BYTES_PER_PIXEL} bytes \
             per pixel of --max-pixels allows ({l}); give a smaller image or raise --max-pixels"
        )),
        ImageError::Unsupported(u) => InputError::Unsupported(format!("images with {u}")),
        ImageError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            InputError::Corrupt("the data ends early".into())
        }
        ImageError::IoError(io) => InputError::Unreadable(io),
        other => InputError::Corrupt(readable(&other.to_string())),
    }
}

/// The debug form the PNG decoder names a chunk by, up to its type.
const CHUNK_DEBUG: &str = "ChunkType { type: ";

/// A decoder's message in words: a checksum mismatch says which chunk it is in, and every
/// chunk is named by its four letters in backticks.
fn readable(text: &str) -> String {
    if text.contains("CRC error") {
        let chunk = text
            .find(CHUNK_DEBUG)
            .map(|at| chunk_name(&text[at + CHUNK_DEBUG.len()..]).0);
        return match chunk {
            Some(name) => format!(
                "the checksum (CRC) of its `{name}` chunk does not match the chunk's data: the \
                 file is damaged"
            ),
            None => "the checksum (CRC) of one of its chunks does not match the chunk's data: \
                     the file is damaged"
                .into(),
        };
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(CHUNK_DEBUG) {
        out.push_str(&rest[..at]);
        let (name, after) = chunk_name(&rest[at + CHUNK_DEBUG.len()..]);
        out.push_str(&format!("`{name}`"));
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The chunk's type at the start of `text` (the rest of a `ChunkType { type: ` debug form), and
/// what follows the form's closing brace.
fn chunk_name(text: &str) -> (&str, &str) {
    let name_end = text.find([',', ' ', '}']).unwrap_or(text.len());
    let after = text.find('}').map_or("", |close| &text[close + 1..]);
    (&text[..name_end], after)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBUG_IDAT: &str =
        "ChunkType { type: IDAT, critical: true, private: false, reserved: false, safecopy: false }";

    #[test]
    fn a_checksum_mismatch_names_the_damaged_chunk() {
        let text = format!(
            "Format error decoding Png: CRC error: expected 0x1 have 0x2 while decoding \
             {DEBUG_IDAT} chunk."
        );
        let said = readable(&text);
        assert!(
            said.contains("of its `IDAT` chunk does not match"),
            "{said}"
        );
        assert!(said.contains("checksum (CRC)"), "{said}");
        assert!(!said.contains("ChunkType"), "{said}");
    }

    #[test]
    fn chunks_are_named_by_their_four_letters() {
        let text = format!("Chunk {DEBUG_IDAT} is invalid after {DEBUG_IDAT} chunk.");
        assert_eq!(
            readable(&text),
            "Chunk `IDAT` is invalid after `IDAT` chunk."
        );
        assert_eq!(readable("no chunk here"), "no chunk here");
    }
}
