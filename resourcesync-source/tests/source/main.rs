//! Integration tests of resourcesync-source, one binary with a module per topic.

mod collection;
mod directory;
mod discovery;
mod dump;
mod moving;
mod notification;
mod publisher;
mod set;

use resourcesync_source::{MemoryStore, Store, StoreError};

/// The names of the files directly under `root`, sorted.
pub fn files(root: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A memory store that counts the bytes read and written through it, and whose commits
/// fail while `fail_commit` is set, as a full disk's would.
#[derive(Debug, Default)]
pub struct Counting {
    /// The store wrapped.
    pub inner: MemoryStore,
    /// Bytes read.
    pub read: std::cell::Cell<u64>,
    /// Bytes written.
    pub written: u64,
    /// Whether commits fail.
    pub fail_commit: bool,
}

impl Store for Counting {
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let bytes = self.inner.read(name)?;
        let n = bytes.as_ref().map_or(0, Vec::len) as u64;
        self.read.set(self.read.get() + n);
        Ok(bytes)
    }
    fn exists(&self, name: &str) -> Result<bool, StoreError> {
        self.inner.exists(name)
    }
    fn begin(&mut self) -> Result<(), StoreError> {
        self.inner.begin()
    }
    fn write(&mut self, name: &str, pieces: &[&[u8]]) -> Result<(), StoreError> {
        self.written += pieces.iter().map(|p| p.len() as u64).sum::<u64>();
        self.inner.write(name, pieces)
    }
    fn remove(&mut self, name: &str) -> Result<(), StoreError> {
        self.inner.remove(name)
    }
    fn commit(&mut self) -> Result<(), StoreError> {
        if self.fail_commit {
            return Err(StoreError::Io {
                path: "commit".into(),
                source: std::io::Error::other("no space left on device"),
            });
        }
        self.inner.commit()
    }
    fn abort(&mut self) {
        self.inner.abort()
    }
    fn read_beside(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.read_beside(name)
    }
    fn write_beside(&mut self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.inner.write_beside(name, bytes)
    }
}
