//! A document read by a `PushReader` fed in chunks, as a sans-IO client feeds HTTP body
//! chunks: entries taken after every feed until it needs more, then `finish` and the rest.
//! Shared by the `push` fuzz target and `resourcesync-xml/tests/xml/push.rs`.

use resourcesync_model::{Document, Entry, Finding};
use resourcesync_xml::{Error, Limits, Next, PushReader};

/// Reads `data` with a push reader fed the chunks that `cuts` (ascending offsets; those
/// past the end are ignored) make. Returns what it read, and the most bytes the reader
/// held after a feed. Panics if the reader breaks its protocol: `End` before `finish`,
/// `NeedMore` after it, no head after the end, or `End` not repeated.
pub fn push_read(
    data: &[u8],
    limits: Limits,
    cuts: &[usize],
) -> (Result<(Document, Vec<Finding>), Error>, usize) {
    let mut reader = PushReader::with_limits(limits);
    let mut entries: Vec<Entry> = Vec::new();
    let mut held = 0;
    let mut from = 0;
    let ends = cuts
        .iter()
        .copied()
        .filter(|&c| c <= data.len())
        .chain([data.len()]);
    let read = || -> Result<(), Error> {
        for to in ends {
            let to = to.max(from);
            reader.feed(&data[from..to])?;
            from = to;
            held = held.max(reader.buffered());
            loop {
                match reader.next_entry()? {
                    Next::Entry(entry) => entries.push(entry),
                    Next::NeedMore => break,
                    Next::End => panic!("the end before finish"),
                    _ => unreachable!(),
                }
            }
        }
        reader.finish()?;
        loop {
            match reader.next_entry()? {
                Next::Entry(entry) => entries.push(entry),
                Next::NeedMore => panic!("more needed after finish"),
                Next::End => break,
                _ => unreachable!(),
            }
        }
        Ok(())
    };
    let result = read().and_then(|()| {
        let head = reader
            .head()?
            .cloned()
            .expect("a head once the end is read");
        assert!(
            matches!(reader.next_entry(), Ok(Next::End)),
            "End once, End again"
        );
        Ok((
            Document {
                head,
                entries: std::mem::take(&mut entries),
            },
            reader.take_findings(),
        ))
    });
    (result, held)
}

/// Cut points for `data` derived from its bytes, so that each run is reproducible: chunks
/// of 1 to 16 bytes, with now and then an empty feed.
pub fn cuts_from(data: &[u8]) -> Vec<usize> {
    let mut state = data.iter().fold(0x9E37_79B9_7F4A_7C15_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3)
    });
    let mut cuts = Vec::new();
    let mut at = 0;
    while at < data.len() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let step = (state >> 60) as usize; // 0 to 15: 0 is an empty feed
        at += step;
        cuts.push(at.min(data.len()));
    }
    cuts
}
