//! The `pri` attribute: a priority among links with the same relation (section 7).

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

use crate::rules::{Rule, RuleError};

/// A link priority, an integer from 1 (highest) to 999,999 (lowest).
///
/// A link without `pri` has the lowest priority, [`Priority::DEFAULT`].
///
/// ```
/// use resourcesync_model::Priority;
///
/// let p: Priority = "1".parse()?;
/// assert!(p < Priority::DEFAULT);
/// assert!("0".parse::<Priority>().is_err());
/// assert!("1000000".parse::<Priority>().is_err());
/// # Ok::<(), resourcesync_model::PriorityError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Priority(NonZeroU32);

impl Priority {
    /// The highest priority, 1.
    pub const HIGHEST: Priority = Priority(NonZeroU32::MIN);
    /// The priority of a link without `pri`: 999,999.
    pub const DEFAULT: Priority = match NonZeroU32::new(999_999) {
        Some(n) => Priority(n),
        None => Priority(NonZeroU32::MIN),
    };

    /// A priority; fails outside 1–999,999.
    pub fn new(value: u32) -> Result<Priority, PriorityError> {
        NonZeroU32::new(value)
            .filter(|v| v.get() <= 999_999)
            .map(Priority)
            .ok_or_else(|| PriorityError {
                input: value.to_string(),
            })
    }

    /// The value.
    pub fn get(self) -> u32 {
        self.0.get()
    }
}

impl Default for Priority {
    fn default() -> Self {
        Priority::DEFAULT
    }
}

/// A `pri` value that is not an integer from 1 to 999,999.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid pri \"{input}\": expected an integer from 1 to 999999")]
pub struct PriorityError {
    /// The offending text, cut to 64 characters.
    pub input: String,
}

impl RuleError for PriorityError {
    fn rule(&self) -> Rule {
        Rule::PriorityRange
    }
}

impl FromStr for Priority {
    type Err = PriorityError;
    /// Decimal digits only: no sign, no fraction, no white space.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = || PriorityError {
            input: crate::rules::clip(s),
        };
        if s.is_empty() || s.len() > 7 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(fail());
        }
        s.parse::<u32>()
            .ok()
            .and_then(|v| Priority::new(v).ok())
            .ok_or_else(fail)
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

crate::rules::serde_as_text!(Priority);
