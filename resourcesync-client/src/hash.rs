//! The hashers of the maps a sync keeps, one for each kind of key, here and in
//! `resourcesync-destination`: which kind a map's keys are says which it takes.

/// The hasher of maps keyed by what this program numbers itself (request ids, change
/// ids, the Destination's journal entries): foldhash, with a fixed seed, as nobody else
/// chooses these keys.
pub type IdHash = foldhash::fast::FixedState;

/// The hasher of maps keyed by what a Source chooses (its URIs, the paths made from
/// them, hashes of them): foldhash (a fraction of SipHash's work for a URI, and every
/// resource's record is hashed several times a run), seeded at random per map. That is
/// what foldhash calls minimally DoS-resistant: no list of keys collides in every map,
/// so a Source cannot prepare one; it does not claim to hold against an attacker who
/// observes the hashes, which a Source never sees (nor a map's order). foldhash's
/// `fast` variant, which it makes for hash tables (its `quality` one adds a final mix
/// for uses that need well-spread bits, such as sketches).
pub type SourceHash = foldhash::fast::RandomState;
