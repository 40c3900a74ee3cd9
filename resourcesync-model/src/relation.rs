//! Link relation types: the `rel` attribute of `<rs:ln>` (section 7 and section 14).

use std::fmt;
use std::str::FromStr;

use crate::rules::{Rule, RuleError};

/// The URI of the patch relation of section 14.4.
pub const PATCH_RELATION: &str = "http://www.openarchives.org/rs/terms/patch";

/// A link relation type.
///
/// The relations the standards use have their own variants; any other relation registered
/// with IANA is [`Relation::Registered`] and an extension relation is [`Relation::Uri`]
/// (RFC 5988, section 4.2). Both keep the text as written. Relation names compare
/// case-insensitively (RFC 8288): `rel="Up"` parses to [`Relation::Up`], which writes
/// itself back as `up`.
///
/// ```
/// use resourcesync_model::Relation;
///
/// assert_eq!("up".parse::<Relation>()?, Relation::Up);
/// assert_eq!("DescribedBy".parse::<Relation>()?, Relation::DescribedBy);
/// assert_eq!("http://www.openarchives.org/rs/terms/patch".parse::<Relation>()?, Relation::Patch);
/// assert_eq!("license".parse::<Relation>()?, Relation::Registered("license".into()));
/// assert!("not a relation".parse::<Relation>().is_err());
/// # Ok::<(), resourcesync_model::RelationError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Relation {
    /// `up`: to the Capability List, or from a Capability List to the Source Description.
    Up,
    /// `index`: to the parent index document.
    Index,
    /// `describedby`: to a description of the resource, Source or set of resources.
    DescribedBy,
    /// `describes`: from metadata to the resource it describes (section 14.5).
    Describes,
    /// `contents`: from a dump entry to the package's manifest.
    Contents,
    /// `duplicate`: to a mirror location (section 14.2).
    Duplicate,
    /// `alternate`: to an alternate representation (section 14.3).
    Alternate,
    /// `canonical`: to the generic URI (section 14.3).
    Canonical,
    /// `http://www.openarchives.org/rs/terms/patch`: to a description of the changes
    /// (section 14.4).
    Patch,
    /// `memento`: to a prior version (section 14.6).
    Memento,
    /// `timegate`: to a Memento TimeGate (section 14.6).
    TimeGate,
    /// `timemap`: to a Memento TimeMap (section 14.6).
    TimeMap,
    /// `collection`: to a collection the resource belongs to (section 14.7).
    Collection,
    /// `via`: to the resource at the original Source (section 14.8).
    Via,
    /// `profile`: to the kind of metadata used (section 14.5, RFC 6906).
    Profile,
    /// `archives`: to an archive of the document (Archives, section 2.2).
    Archives,
    /// `hub`: from a notification channel's entry in a Capability List to its WebSub hub
    /// (Change Notification and Framework Notification, section 5; registered by WebSub).
    Hub,
    /// Any other registered relation name, as written.
    Registered(String),
    /// Any other extension relation, an absolute URI, as written.
    Uri(String),
}

const NAMED: [(Relation, &str); 17] = [
    (Relation::Up, "up"),
    (Relation::Index, "index"),
    (Relation::DescribedBy, "describedby"),
    (Relation::Describes, "describes"),
    (Relation::Contents, "contents"),
    (Relation::Duplicate, "duplicate"),
    (Relation::Alternate, "alternate"),
    (Relation::Canonical, "canonical"),
    (Relation::Patch, PATCH_RELATION),
    (Relation::Memento, "memento"),
    (Relation::TimeGate, "timegate"),
    (Relation::TimeMap, "timemap"),
    (Relation::Collection, "collection"),
    (Relation::Via, "via"),
    (Relation::Profile, "profile"),
    (Relation::Archives, "archives"),
    (Relation::Hub, "hub"),
];

impl Relation {
    /// The attribute value.
    pub fn as_str(&self) -> &str {
        match self {
            Relation::Registered(s) | Relation::Uri(s) => s,
            known => NAMED
                .iter()
                .find(|(r, _)| r == known)
                .map_or("", |(_, text)| text),
        }
    }
}

/// A `rel` value that is neither a registered relation name nor an absolute URI.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid link relation \"{input}\": expected a registered relation name or an absolute URI"
)]
pub struct RelationError {
    /// The offending text, cut to 64 characters.
    pub input: String,
}

impl RuleError for RelationError {
    fn rule(&self) -> Rule {
        Rule::RelationSyntax
    }
}

impl FromStr for Relation {
    type Err = RelationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // RFC 8288, sections 2.1.1 and 2.1.2: registered relation names and extension
        // relation URIs both compare case-insensitively, so `Up` is the `up` link and
        // the patch URI may be written in any case. A named relation is written back in
        // the standard's spelling.
        if let Some((r, _)) = NAMED.iter().find(|(_, text)| text.eq_ignore_ascii_case(s)) {
            return Ok(r.clone());
        }
        // RFC 5988: reg-rel-type = LOALPHA *( LOALPHA / DIGIT / "." / "-" ); relation
        // names compare case-insensitively, so upper case is accepted and kept.
        let mut chars = s.chars();
        let registered = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
        if registered {
            return Ok(Relation::Registered(s.to_owned()));
        }
        if crate::Uri::parse(s).is_ok() {
            return Ok(Relation::Uri(s.to_owned()));
        }
        Err(RelationError {
            input: crate::rules::clip(s),
        })
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

crate::rules::serde_as_text!(Relation);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_relations_round_trip() {
        for (r, text) in NAMED {
            assert_eq!(text.parse::<Relation>().unwrap(), r);
            assert_eq!(r.as_str(), text);
        }
        for (r, text) in NAMED {
            for variant in [
                text.to_ascii_uppercase(),
                text[..1].to_ascii_uppercase() + &text[1..],
            ] {
                assert_eq!(variant.parse::<Relation>().unwrap(), r, "{variant}");
            }
        }
        assert_eq!(
            "HTTP://WWW.OPENARCHIVES.ORG/RS/TERMS/PATCH"
                .parse::<Relation>()
                .unwrap(),
            Relation::Patch
        );
        // Not a registered name of ours, but still registered-name syntax: kept as written.
        assert_eq!(
            "License".parse::<Relation>().unwrap(),
            Relation::Registered("License".into())
        );
        let uri: Relation = "http://example.org/rel/x".parse().unwrap();
        assert_eq!(uri, Relation::Uri("http://example.org/rel/x".into()));
        for bad in ["", "1up", "up down", "a_b", "/relative"] {
            assert_eq!(
                bad.parse::<Relation>().unwrap_err().rule(),
                Rule::RelationSyntax
            );
        }
    }
}
