//! The closed vocabularies of the standard: `change` and `<changefreq>`.

use std::fmt;
use std::str::FromStr;

use crate::rules::{Rule, RuleError};

/// A value that is not one of a closed vocabulary's keywords.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid {attribute} value \"{input}\": expected one of {expected}")]
pub struct KeywordError {
    /// The attribute or element that holds the value.
    pub attribute: &'static str,
    /// The offending text, cut to 64 characters.
    pub input: String,
    /// The allowed values, for the message.
    pub expected: &'static str,
    rule: Rule,
}

impl RuleError for KeywordError {
    fn rule(&self) -> Rule {
        self.rule
    }
}

/// Defines a closed keyword enum with `as_str`, `FromStr`, `Display` and serde as text.
macro_rules! keywords {
    (
        $(#[$meta:meta])*
        $name:ident, $attribute:literal, $rule:expr,
        { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(clippy::exhaustive_enums)] // the standard closes this vocabulary
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in the order of the standard.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value as written in a document.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl FromStr for $name {
            type Err = KeywordError;
            fn from_str(s: &str) -> Result<Self, KeywordError> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(KeywordError {
                        attribute: $attribute,
                        input: crate::rules::clip(s),
                        expected: concat!($($text, " "),+),
                        rule: $rule,
                    }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        #[cfg(feature = "serde")]
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

keywords! {
    /// The `change` attribute: the type of change a resource underwent (section 7).
    ///
    /// ```
    /// use resourcesync_model::Change;
    /// assert_eq!("deleted".parse::<Change>()?, Change::Deleted);
    /// assert!("removed".parse::<Change>().is_err());
    /// # Ok::<(), resourcesync_model::KeywordError>(())
    /// ```
    Change, "change", Rule::ChangeValue, {
        /// `created`
        Created = "created",
        /// `updated`
        Updated = "updated",
        /// `deleted`
        Deleted = "deleted",
    }
}

keywords! {
    /// The `<changefreq>` element: a hint about how often a resource changes (section 7).
    ChangeFreq, "changefreq", Rule::ChangefreqValue, {
        /// `always`: the resource changes each time it is accessed.
        Always = "always",
        /// `hourly`
        Hourly = "hourly",
        /// `daily`
        Daily = "daily",
        /// `weekly`
        Weekly = "weekly",
        /// `monthly`
        Monthly = "monthly",
        /// `yearly`
        Yearly = "yearly",
        /// `never`: an archived resource.
        Never = "never",
    }
}
