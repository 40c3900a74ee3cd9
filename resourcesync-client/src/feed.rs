//! A document read as its body arrives.
//!
//! TEMPORARY: buffers the document and reads it at its end, with the same interface as
//! `resourcesync_xml::PushReader`, which replaces it.

use resourcesync_model::{CheckOptions, DocumentHead, Entry, Finding};
use resourcesync_xml::{Error, Limits, Reader};

#[allow(clippy::large_enum_variant)]
pub(crate) enum Next {
    Entry(Entry),
    NeedMore,
    End,
}

pub(crate) struct Feed {
    bytes: Vec<u8>,
    limits: Limits,
    read: Option<(DocumentHead, std::vec::IntoIter<Entry>)>,
    findings: Vec<Finding>,
    error: Option<Error>,
    finished: bool,
}

impl Feed {
    pub(crate) fn with_limits(limits: Limits) -> Feed {
        Feed {
            bytes: Vec::new(),
            limits,
            read: None,
            findings: Vec::new(),
            error: None,
            finished: false,
        }
    }

    pub(crate) fn with_check_options(self, _options: Option<CheckOptions>) -> Feed {
        self
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.bytes.extend_from_slice(bytes);
        Ok(())
    }

    pub(crate) fn finish(&mut self) -> Result<(), Error> {
        self.finished = true;
        let reader = Reader::from_slice_with_limits(&self.bytes, self.limits);
        match reader.read_to_document() {
            Ok((doc, findings)) => {
                self.findings = findings;
                self.read = Some((doc.head, doc.entries.into_iter()));
            }
            Err(e) => self.error = Some(e),
        }
        self.bytes = Vec::new();
        Ok(())
    }

    pub(crate) fn head(&mut self) -> Result<Option<&DocumentHead>, Error> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        Ok(self.read.as_ref().map(|(h, _)| h))
    }

    pub(crate) fn next_entry(&mut self) -> Result<Next, Error> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match &mut self.read {
            None if self.finished => Ok(Next::End),
            None => Ok(Next::NeedMore),
            Some((_, entries)) => Ok(entries.next().map_or(Next::End, Next::Entry)),
        }
    }

    pub(crate) fn take_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut self.findings)
    }
}
