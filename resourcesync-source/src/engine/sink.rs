//! Where a run's documents go: a directory ([`Directory`]) for `build`, a [`Store`] for the
//! [`Publisher`](crate::Publisher). Documents are named relative to the publication's
//! root (`resourcesync/changelist.xml`), which the base URI serves.

use std::cell::RefCell;
use std::fs;
use std::io;

use crate::Directory;
use resourcesync_model::Uri;

use super::PublishError;
use crate::store::{Store, StoreError};

/// A publication being written.
pub(crate) trait Sink {
    /// The base URI, which the publication's root is served at.
    fn base(&self) -> &Uri;
    /// The URI `name` has under the base.
    fn uri(&self, name: &str) -> Result<Uri, PublishError>;
    /// The name of a URI under the base, as [`Sink::uri`] made it.
    fn name<'u>(&self, uri: &'u Uri) -> Option<&'u str>;
    /// The bytes of `name`, as the last run wrote them (carried over into this one), or
    /// `None` where there is no such document.
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, PublishError>;
    /// Whether `name` is there, as [`Sink::read`] finds it: a link there or what is not a
    /// regular file is the error `read` gives, and so is what cannot be told.
    fn exists(&self, name: &str) -> Result<bool, PublishError>;
    /// Writes `name` whole, its bytes given in `pieces`, replacing what was there.
    fn write(&self, name: &str, pieces: &[&[u8]]) -> Result<(), PublishError>;
    /// Removes `name`, if it is there.
    fn remove(&self, name: &str) -> Result<(), PublishError>;
}

impl Sink for Directory {
    fn base(&self) -> &Uri {
        Directory::base(self)
    }

    fn uri(&self, name: &str) -> Result<Uri, PublishError> {
        Ok(Directory::uri(self, name)?)
    }

    fn name<'u>(&self, uri: &'u Uri) -> Option<&'u str> {
        uri.as_str().strip_prefix(self.base().as_str())
    }

    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, PublishError> {
        let path = self.path(&Sink::uri(self, name)?)?;
        match crate::directory::read_file(&path, true) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io { path, source }.into()),
        }
    }

    fn exists(&self, name: &str) -> Result<bool, PublishError> {
        let path = self.path(&Sink::uri(self, name)?)?;
        // As `read` finds it: a link there, even one to nothing, is an error naming it.
        crate::directory::file_exists(&path)
            .map_err(|source| StoreError::Io { path, source }.into())
    }

    fn write(&self, name: &str, pieces: &[&[u8]]) -> Result<(), PublishError> {
        self.write_pieces(&Sink::uri(self, name)?, pieces)?;
        Ok(())
    }

    fn remove(&self, name: &str) -> Result<(), PublishError> {
        let path = self.path(&Sink::uri(self, name)?)?;
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(StoreError::Io { path, source: e }.into())
            }
            _ => Ok(()),
        }
    }
}

/// A [`Store`] seen as a [`Sink`] under a base URI, counting the bytes written.
pub(crate) struct StoreSink<'s, S: Store> {
    base: Uri,
    store: RefCell<&'s mut S>,
    written: std::cell::Cell<u64>,
}

impl<'s, S: Store> StoreSink<'s, S> {
    pub(crate) fn new(base: Uri, store: &'s mut S) -> StoreSink<'s, S> {
        StoreSink {
            base,
            store: RefCell::new(store),
            written: std::cell::Cell::new(0),
        }
    }

    /// The bytes written so far.
    pub(crate) fn written(&self) -> u64 {
        self.written.get()
    }
}

impl<S: Store> Sink for StoreSink<'_, S> {
    fn base(&self) -> &Uri {
        &self.base
    }

    fn uri(&self, name: &str) -> Result<Uri, PublishError> {
        format!("{}{name}", self.base)
            .parse()
            .map_err(|error| PublishError::Name {
                name: name.to_owned(),
                error,
            })
    }

    fn name<'u>(&self, uri: &'u Uri) -> Option<&'u str> {
        uri.as_str().strip_prefix(self.base.as_str())
    }

    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, PublishError> {
        Ok(self.store.borrow().read(name)?)
    }

    fn exists(&self, name: &str) -> Result<bool, PublishError> {
        Ok(self.store.borrow().exists(name)?)
    }

    fn write(&self, name: &str, pieces: &[&[u8]]) -> Result<(), PublishError> {
        self.store.borrow_mut().write(name, pieces)?;
        let bytes: usize = pieces.iter().map(|p| p.len()).sum();
        self.written.set(self.written.get() + bytes as u64);
        Ok(())
    }

    fn remove(&self, name: &str) -> Result<(), PublishError> {
        Ok(self.store.borrow_mut().remove(name)?)
    }
}

/// A sink that leaves a document as it is when its bytes would not change, and counts the
/// documents it left.
pub(crate) struct Unchanged<'a> {
    sink: &'a dyn Sink,
    left: std::cell::Cell<u64>,
}

impl<'a> Unchanged<'a> {
    pub(crate) fn new(sink: &'a dyn Sink) -> Unchanged<'a> {
        Unchanged {
            sink,
            left: std::cell::Cell::new(0),
        }
    }

    /// The documents left as they were.
    pub(crate) fn left(&self) -> u64 {
        self.left.get()
    }
}

impl Sink for Unchanged<'_> {
    fn base(&self) -> &Uri {
        self.sink.base()
    }

    fn uri(&self, name: &str) -> Result<Uri, PublishError> {
        self.sink.uri(name)
    }

    fn name<'u>(&self, uri: &'u Uri) -> Option<&'u str> {
        self.sink.name(uri)
    }

    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, PublishError> {
        self.sink.read(name)
    }

    fn exists(&self, name: &str) -> Result<bool, PublishError> {
        self.sink.exists(name)
    }

    fn write(&self, name: &str, pieces: &[&[u8]]) -> Result<(), PublishError> {
        if let Some(old) = self.sink.read(name)? {
            let length: usize = pieces.iter().map(|p| p.len()).sum();
            if old.len() == length && old == pieces.concat() {
                self.left.set(self.left.get() + 1);
                return Ok(());
            }
        }
        self.sink.write(name, pieces)
    }

    fn remove(&self, name: &str) -> Result<(), PublishError> {
        self.sink.remove(name)
    }
}
