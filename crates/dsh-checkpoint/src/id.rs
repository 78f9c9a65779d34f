//! What a content is named by in the store: Git's blob id, so that a file Git already holds is
//! the same name in both, and the store need not keep a copy of it.

use sha1::{Digest, Sha1};

/// Git's id of a blob: the SHA-1 of `blob <length>\0` and the bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobId([u8; 20]);

impl std::fmt::Debug for BlobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.hex())
    }
}

impl serde::Serialize for BlobId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.hex())
    }
}

impl<'de> serde::Deserialize<'de> for BlobId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let hex = String::deserialize(deserializer)?;
        BlobId::parse(&hex)
            .ok_or_else(|| serde::de::Error::custom(format!("{hex:?} is no blob id")))
    }
}

impl std::fmt::Display for BlobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.hex())
    }
}

impl BlobId {
    /// No content's id (nothing is known to hash to twenty zero bytes): a file's entry the
    /// walk made and that is not named yet.
    pub(crate) const UNNAMED: BlobId = BlobId([0; 20]);

    /// Its 20 bytes.
    pub fn as_bytes(&self) -> &[u8; 20] {
        &self.0
    }

    /// The id of `content`.
    pub fn of(content: &[u8]) -> BlobId {
        let mut hasher = Sha1::new();
        hasher.update(format!("blob {}\0", content.len()).as_bytes());
        hasher.update(content);
        BlobId(hasher.finalize().into())
    }

    /// An id from its 20 bytes (as an index file holds it).
    pub fn from_bytes(bytes: &[u8]) -> Option<BlobId> {
        Some(BlobId(bytes.try_into().ok()?))
    }

    /// An id from its 40 hex digits.
    pub fn parse(hex: &str) -> Option<BlobId> {
        if hex.len() != 40 {
            return None;
        }
        let mut bytes = [0u8; 20];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(BlobId(bytes))
    }

    /// Its 40 hex digits, as Git prints it.
    pub fn hex(&self) -> String {
        hex(&self.0)
    }
}

/// `bytes` as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin`, and the empty blob.
        assert_eq!(
            BlobId::of(b"hello\n").hex(),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(
            BlobId::of(b"").hex(),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        let id = BlobId::of(b"x");
        assert_eq!(BlobId::parse(&id.hex()), Some(id));
        assert_eq!(BlobId::parse("zz"), None);
    }
}
