//! A Source farm: many simulated Sources ([`Served`]) on 127.0.0.1, each at its own port,
//! all served by one runtime, each with its own faults, robots.txt and request log: what
//! a harvest of many Sources is tested against.

use crate::served::Served;
use crate::source::Source;

/// Sources on 127.0.0.1, served until dropped.
pub struct Farm {
    /// The Sources, in the order made.
    pub sources: Vec<Served>,
    // Dropped after the Sources: it serves them.
    _runtime: tokio::runtime::Runtime,
}

impl Farm {
    /// `n` Sources, the `i`th made by `build(i, source)`, published and served.
    pub fn start(n: usize, mut build: impl FnMut(usize, &mut Source)) -> Farm {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let sources = (0..n)
            .map(|i| Served::start_on(runtime.handle(), |s| build(i, s)))
            .collect();
        Farm {
            sources,
            _runtime: runtime,
        }
    }
}
