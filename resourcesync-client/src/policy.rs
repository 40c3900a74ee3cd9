//! Which URIs the client may fetch: only http and https, only the Source's authority
//! unless the caller allows others, and no special-purpose addresses (loopback, private
//! ranges, cloud metadata at 169.254.169.254) unless the Source is on one or the caller
//! allows them, so that a Source cannot make a Destination request what is behind its
//! firewall (server-side request forgery).
//!
//! # What the policy sees, and what the driver must check
//! The client never resolves a name (it performs no IO), so a [`Policy`] judges what the
//! URI says: its scheme, its authority, and its host when the host is an IP literal. A host
//! name that resolves to a private address (`internal.example`, `127.0.0.1.nip.io`, a name
//! whose DNS answer changes between two lookups) is the driver's to refuse: call
//! [`Policy::check_address`] with every address the resolver returns, before connecting,
//! and connect only to an address that passed.
//!
//! Hosts are read as the `url` crate reads them (the WHATWG URL standard), which is how
//! browsers and reqwest read them: `http://2130706433/`, `http://0x7f.1/`,
//! `http://0177.0.0.1/` and `http://127.1/` are all 127.0.0.1, and refused as loopback. A
//! driver whose HTTP stack reads hosts otherwise should request the URI that
//! [`Uri::to_url`] gives, or rely on [`Policy::check_address`], since `getaddrinfo` reads
//! such names as addresses too.
//!
//! # Authorities
//! An authority is a host and a port, as the `url` crate normalizes them: the host in
//! lower case and IDNA form, the scheme's default port dropped. So `http://Example.com:80/`
//! and `https://example.com/` have the Source's authority `example.com`, and
//! `http://example.com:8080/` does not. A trailing dot (`example.com.`) makes another
//! authority. The userinfo of a URI (`http://example.com@evil.example/`) is refused
//! outright: it only ever serves to make a URI look like it is on another host.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use resourcesync_model::Uri;
use url::{Host, Url};

/// A kind of special-purpose address (IANA's IPv4 and IPv6 Special-Purpose Address
/// Registries, RFC 6890): none of them is a public web server's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpecialAddress {
    /// `0.0.0.0/8` ("this network") and `::`.
    Unspecified,
    /// `127.0.0.0/8`, `::1`, and the names `localhost` and `*.localhost` (RFC 6761).
    Loopback,
    /// `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16` (RFC 1918).
    Private,
    /// `100.64.0.0/10`, shared by carrier-grade NAT (RFC 6598).
    SharedCgnat,
    /// `169.254.0.0/16` (cloud metadata services live here) and `fe80::/10`.
    LinkLocal,
    /// `fc00::/7` (RFC 4193) and the deprecated site-local `fec0::/10`.
    UniqueLocal,
    /// `224.0.0.0/4` and `ff00::/8`.
    Multicast,
    /// `192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// `198.18.0.0/15` and `2001:2::/48`.
    Benchmarking,
    /// An IPv4 address in IPv6 clothing: IPv4-mapped `::ffff:0:0/96` and the deprecated
    /// IPv4-compatible `::/96`.
    Ipv4Mapped,
    /// Prefixes that carry an IPv4 address to a translator, which may lead anywhere:
    /// NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002::/16`, Teredo `2001::/32`.
    Translation,
    /// The rest of the registries: `192.0.0.0/24`, `192.88.99.0/24`, `240.0.0.0/4` with
    /// the broadcast address, `100::/64` (discard), `2001::/23`, `5f00::/16`.
    Reserved,
}

impl fmt::Display for SpecialAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SpecialAddress::Unspecified => "unspecified",
            SpecialAddress::Loopback => "loopback",
            SpecialAddress::Private => "private",
            SpecialAddress::SharedCgnat => "shared (carrier-grade NAT)",
            SpecialAddress::LinkLocal => "link-local",
            SpecialAddress::UniqueLocal => "unique-local",
            SpecialAddress::Multicast => "multicast",
            SpecialAddress::Documentation => "documentation",
            SpecialAddress::Benchmarking => "benchmarking",
            SpecialAddress::Ipv4Mapped => "IPv4-mapped",
            SpecialAddress::Translation => "translation",
            SpecialAddress::Reserved => "reserved",
        })
    }
}

impl SpecialAddress {
    /// The kind of special-purpose address `address` is, or `None` for an ordinary one.
    ///
    /// ```
    /// use resourcesync_client::policy::SpecialAddress;
    ///
    /// assert_eq!(SpecialAddress::of("169.254.169.254".parse()?), Some(SpecialAddress::LinkLocal));
    /// assert_eq!(SpecialAddress::of("::ffff:127.0.0.1".parse()?), Some(SpecialAddress::Ipv4Mapped));
    /// assert_eq!(SpecialAddress::of("93.184.215.14".parse()?), None);
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn of(address: IpAddr) -> Option<SpecialAddress> {
        match address {
            IpAddr::V4(v4) => of_v4(v4),
            IpAddr::V6(v6) => of_v6(v6),
        }
    }
}

fn of_v4(ip: Ipv4Addr) -> Option<SpecialAddress> {
    let [a, b, c, _] = ip.octets();
    let kind = match (a, b, c) {
        (0, _, _) => SpecialAddress::Unspecified,
        (10, _, _) => SpecialAddress::Private,
        (100, 64..=127, _) => SpecialAddress::SharedCgnat,
        (127, _, _) => SpecialAddress::Loopback,
        (169, 254, _) => SpecialAddress::LinkLocal,
        (172, 16..=31, _) => SpecialAddress::Private,
        (192, 0, 0) | (192, 88, 99) => SpecialAddress::Reserved,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => SpecialAddress::Documentation,
        (192, 168, _) => SpecialAddress::Private,
        (198, 18..=19, _) => SpecialAddress::Benchmarking,
        (224..=239, _, _) => SpecialAddress::Multicast,
        (240..=255, _, _) => SpecialAddress::Reserved,
        _ => return None,
    };
    Some(kind)
}

fn of_v6(ip: Ipv6Addr) -> Option<SpecialAddress> {
    let s = ip.segments();
    let kind = match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => SpecialAddress::Unspecified,
        [0, 0, 0, 0, 0, 0, 0, 1] => SpecialAddress::Loopback,
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0, 0, _, _] => SpecialAddress::Ipv4Mapped,
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] | [0x64, 0xff9b, 1, ..] => SpecialAddress::Translation,
        [0x100, 0, 0, 0, ..] => SpecialAddress::Reserved,
        [0x2001, 0, ..] => SpecialAddress::Translation,
        [0x2001, 2, 0, ..] => SpecialAddress::Benchmarking,
        [0x2001, 0..=0x01ff, ..] => SpecialAddress::Reserved,
        [0x2001, 0xdb8, ..] => SpecialAddress::Documentation,
        [0x2002, ..] => SpecialAddress::Translation,
        [0x3fff, 0..=0x0fff, ..] => SpecialAddress::Documentation,
        [0x5f00, ..] => SpecialAddress::Reserved,
        [0xfc00..=0xfdff, ..] | [0xfec0..=0xfeff, ..] => SpecialAddress::UniqueLocal,
        [0xfe80..=0xfebf, ..] => SpecialAddress::LinkLocal,
        [0xff00..=0xffff, ..] => SpecialAddress::Multicast,
        _ => return None,
    };
    Some(kind)
}

/// Why a [`Policy`] refuses a URI.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The scheme is not http or https.
    NotHttp,
    /// The `url` crate cannot parse it; its message.
    Unparsable(String),
    /// It has a userinfo (`user@`), which only ever disguises the host.
    Userinfo,
    /// Its authority is neither the Source's nor one the caller allowed.
    OtherAuthority(String),
    /// Its host is, or resolved to, a special-purpose address the policy does not allow.
    SpecialAddress {
        /// The host as the `url` crate normalized it, or the resolved address.
        host: String,
        /// What kind of address it is.
        kind: SpecialAddress,
    },
    /// A redirect from https to http.
    Downgrade,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotHttp => f.write_str("not an http or https URI"),
            Refusal::Unparsable(reason) => write!(f, "cannot be parsed: {reason}"),
            Refusal::Userinfo => f.write_str("has a userinfo"),
            // A Source built for one name served under another (`127.0.0.1` and
            // `localhost`, another port), or resources on a mirror host, are refused
            // until the caller allows them (`Policy::allow_authority`), and only the
            // caller can: the way out is the caller's to say (`resourcesync` says its
            // `--allow-authority`).
            Refusal::OtherAuthority(authority) => {
                write!(f, "authority {authority:?} is not the Source's")
            }
            Refusal::SpecialAddress { host, kind } => write!(f, "{host} is a {kind} address"),
            Refusal::Downgrade => f.write_str("redirects from https to http"),
        }
    }
}

/// A URI a [`Policy`] refuses, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("refused {uri:?}: {refusal}")]
pub struct PolicyError {
    /// The URI refused, as written (for a redirect, its target resolved).
    pub uri: String,
    /// Why.
    pub refusal: Refusal,
}

/// An authority the caller tried to allow that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid authority {authority:?}: {reason}")]
pub struct AuthorityError {
    /// The text given.
    pub authority: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Which authorities besides the Source's may be fetched.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Others {
    Listed(Vec<String>),
    Any,
}

/// What the client may fetch for one Source. See the [module](self) for what it checks and
/// what it leaves to the driver.
///
/// ```
/// use resourcesync_client::policy::{Policy, Refusal, SpecialAddress};
///
/// let policy = Policy::new(&"https://example.com/.well-known/resourcesync".parse()?)?
///     .allow_authority("cdn.example.org")?;
/// assert!(policy.check(&"http://example.com/res1".parse()?).is_ok());
/// assert!(policy.check(&"https://cdn.example.org/res1".parse()?).is_ok());
///
/// let refusal = |policy: &Policy, uri: &str| policy.check(&uri.parse().unwrap()).unwrap_err().refusal;
/// assert_eq!(refusal(&policy, "ftp://example.com/res1"), Refusal::NotHttp);
/// assert_eq!(refusal(&policy, "http://example.org/res1"), Refusal::OtherAuthority("example.org".into()));
/// assert_eq!(refusal(&policy, "http://example.com@example.org/"), Refusal::Userinfo);
///
/// // Loopback in disguise, even on an allowed authority.
/// let policy = policy.allow_any_authority();
/// assert_eq!(
///     refusal(&policy, "http://2130706433/"),
///     Refusal::SpecialAddress { host: "127.0.0.1".into(), kind: SpecialAddress::Loopback }
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Policy {
    authority: String,
    /// The Source's URI's scheme and authority as written: a URI written with both is on
    /// `authority`, and on `own_host`, known without parsing it again (the `url` crate's
    /// parse, IDNA included, of every listed URI was a tenth of a run's main thread).
    written: Written,
    /// The kind of special address the Source's host is, if it is one.
    own_host: Option<(String, SpecialAddress)>,
    others: Others,
    /// The kinds of special address allowed: the Source's own, and what the caller adds.
    allowed: Vec<SpecialAddress>,
    any_address: bool,
}

impl Policy {
    /// The policy for the Source at `source` (its Source Description, or any URI on its
    /// authority): only its authority, and no special-purpose address except of the kind
    /// the Source's own host is on (a Source on `127.0.0.1` may list `[::1]`, one on
    /// `10.0.0.5` may list `192.168.1.2`; neither may list `169.254.169.254`).
    ///
    /// Fails when `source` itself is not a URI the client could fetch: not http or https,
    /// unparsable, or with a userinfo.
    pub fn new(source: &Uri) -> Result<Policy, PolicyError> {
        let (url, authority) = parse(source)?;
        let kind = host_kind(&url);
        let allowed = kind.iter().map(|(_, kind)| *kind).collect();
        Ok(Policy {
            authority,
            written: Written::of(source),
            own_host: kind,
            others: Others::Listed(Vec::new()),
            allowed,
            any_address: false,
        })
    }

    /// Allows one more authority (`host` or `host:port`, without the scheme's default
    /// port): a mirror host, or the Source's own under another name (a Source built for
    /// `http://127.0.0.1:8080/` reached as `http://localhost:8080/`, or served on another
    /// port). Special-purpose addresses stay refused there unless allowed too.
    /// [`Config::with_allowed_authority`](crate::Config::with_allowed_authority) allows it
    /// and gives its resources their local paths.
    pub fn allow_authority(mut self, authority: &str) -> Result<Policy, AuthorityError> {
        let fail = |reason: &str| AuthorityError {
            authority: authority.to_owned(),
            reason: reason.to_owned(),
        };
        if authority.contains(['/', '?', '#', '@', '\\']) || authority.is_empty() {
            return Err(fail("not a host with an optional port"));
        }
        let url = Url::parse(&format!("http://{authority}/")).map_err(|e| fail(&e.to_string()))?;
        if let Others::Listed(list) = &mut self.others {
            list.push(authority_of(&url));
        }
        Ok(self)
    }

    /// Allows every authority. Special-purpose addresses stay refused unless allowed too.
    #[must_use]
    pub fn allow_any_authority(mut self) -> Policy {
        self.others = Others::Any;
        self
    }

    /// Allows one more kind of special-purpose address: `Private` for a Source whose
    /// resources live on an intranet, for example.
    #[must_use]
    pub fn allow_address_kind(mut self, kind: SpecialAddress) -> Policy {
        if !self.allowed.contains(&kind) {
            self.allowed.push(kind);
        }
        self
    }

    /// Allows every address: the check against server-side request forgery is off. For a
    /// Destination that trusts its Source, or tests against a server on 127.0.0.1.
    #[must_use]
    pub fn allow_any_address(mut self) -> Policy {
        self.any_address = true;
        self
    }

    /// Whether the client may fetch `uri`, or why not.
    pub fn check(&self, uri: &Uri) -> Result<(), PolicyError> {
        let refuse = |refusal| PolicyError {
            uri: uri.as_str().to_owned(),
            refusal,
        };
        if self.written.matches(uri) {
            // The Source's own authority as written (it parsed, without a userinfo).
            return match &self.own_host {
                Some((host, kind)) if !self.address_allowed(*kind) => {
                    Err(refuse(Refusal::SpecialAddress {
                        host: host.clone(),
                        kind: *kind,
                    }))
                }
                _ => Ok(()),
            };
        }
        let (url, authority) = parse(uri)?;
        let allowed = authority == self.authority
            || match &self.others {
                Others::Any => true,
                Others::Listed(list) => list.contains(&authority),
            };
        if !allowed {
            return Err(refuse(Refusal::OtherAuthority(authority)));
        }
        match host_kind(&url) {
            Some((host, kind)) if !self.address_allowed(kind) => {
                Err(refuse(Refusal::SpecialAddress { host, kind }))
            }
            _ => Ok(()),
        }
    }

    /// Whether the client may follow a redirect from `from` to `location` (the `Location`
    /// header's value, which may be relative), and the target if so. The target passes
    /// [`check`](Self::check), and a redirect from https to http is refused as a
    /// downgrade. Counting redirects is the caller's.
    ///
    /// ```
    /// use resourcesync_client::policy::{Policy, Refusal};
    ///
    /// let from = "https://example.com/resourcelist.xml".parse()?;
    /// let policy = Policy::new(&from)?;
    /// assert_eq!(policy.check_redirect(&from, "/v2/resourcelist.xml")?.as_str(), "https://example.com/v2/resourcelist.xml");
    /// assert_eq!(policy.check_redirect(&from, "http://example.com/x").unwrap_err().refusal, Refusal::Downgrade);
    /// assert!(matches!(policy.check_redirect(&from, "https://169.254.169.254/latest/meta-data/").unwrap_err().refusal, Refusal::OtherAuthority(_)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_redirect(&self, from: &Uri, location: &str) -> Result<Uri, PolicyError> {
        let unparsable = |reason: String| PolicyError {
            uri: location.to_owned(),
            refusal: Refusal::Unparsable(reason),
        };
        let base = from.to_url().map_err(|e| unparsable(e.reason))?;
        let target = base.join(location).map_err(|e| unparsable(e.to_string()))?;
        let target = Uri::parse(target.as_str()).map_err(|e| unparsable(e.reason))?;
        if from.scheme().eq_ignore_ascii_case("https")
            && target.scheme().eq_ignore_ascii_case("http")
        {
            return Err(PolicyError {
                uri: target.as_str().to_owned(),
                refusal: Refusal::Downgrade,
            });
        }
        self.check(&target)?;
        Ok(target)
    }

    /// Whether the driver may connect to `address`, which the host of `uri` resolved to.
    /// Call it for every address a resolver returns, before connecting: a host name is
    /// the one way to a special-purpose address that [`check`](Self::check) cannot see.
    ///
    /// ```
    /// use resourcesync_client::policy::Policy;
    ///
    /// let uri = "http://example.com/res1".parse()?;
    /// let policy = Policy::new(&uri)?;
    /// assert!(policy.check_address(&uri, "93.184.215.14".parse()?).is_ok());
    /// assert!(policy.check_address(&uri, "10.0.0.1".parse()?).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_address(&self, uri: &Uri, address: IpAddr) -> Result<(), PolicyError> {
        match SpecialAddress::of(address) {
            Some(kind) if !self.address_allowed(kind) => Err(PolicyError {
                uri: uri.as_str().to_owned(),
                refusal: Refusal::SpecialAddress {
                    host: address.to_string(),
                    kind,
                },
            }),
            _ => Ok(()),
        }
    }

    /// The addresses of `found`, which the host name `host` resolved to, that the driver
    /// may connect to ([`check_address`](Self::check_address) of each); the refusal of
    /// one when none of several is allowed. What every resolver of a driver's does with
    /// what it found, before connecting.
    ///
    /// ```
    /// use resourcesync_client::policy::Policy;
    ///
    /// let policy = Policy::new(&"http://example.com/".parse()?)?;
    /// let found = ["10.0.0.1:80".parse()?, "93.184.215.14:80".parse()?];
    /// assert_eq!(policy.allowed_addresses("example.com", found)?, [found[1]]);
    /// assert!(policy.allowed_addresses("example.com", [found[0]]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn allowed_addresses(
        &self,
        host: &str,
        found: impl IntoIterator<Item = std::net::SocketAddr>,
    ) -> Result<Vec<std::net::SocketAddr>, PolicyError> {
        let mut refused = None;
        let allowed: Vec<_> = found
            .into_iter()
            .filter(|a| match SpecialAddress::of(a.ip()) {
                Some(kind) if !self.address_allowed(kind) => {
                    refused = Some(PolicyError {
                        uri: format!("http://{host}/"),
                        refusal: Refusal::SpecialAddress {
                            host: a.ip().to_string(),
                            kind,
                        },
                    });
                    false
                }
                _ => true,
            })
            .collect();
        match refused {
            Some(refusal) if allowed.is_empty() => Err(refusal),
            _ => Ok(allowed),
        }
    }

    fn address_allowed(&self, kind: SpecialAddress) -> bool {
        self.any_address || self.allowed.contains(&kind)
    }
}

/// A URI's scheme and authority as written: the same text under the same scheme is the
/// same authority once normalized (the `url` crate's), so a URI written with the
/// scheme and authority of one already parsed needs no parse to know it.
#[derive(Clone, Debug)]
pub(crate) struct Written {
    scheme: String,
    authority: String,
}

impl Written {
    /// `uri`'s (the scheme in lower case).
    pub(crate) fn of(uri: &Uri) -> Written {
        Written {
            scheme: uri.scheme().to_ascii_lowercase(),
            authority: uri.authority().unwrap_or_default().to_owned(),
        }
    }

    /// Whether `uri` is http(s) and written with this scheme and authority.
    pub(crate) fn matches(&self, uri: &Uri) -> bool {
        uri.is_http()
            && uri.scheme().eq_ignore_ascii_case(&self.scheme)
            && uri.authority() == Some(self.authority.as_str())
    }
}

/// The URI parsed, and its authority, if it is one the client could fetch at all.
fn parse(uri: &Uri) -> Result<(Url, String), PolicyError> {
    let refuse = |refusal| PolicyError {
        uri: uri.as_str().to_owned(),
        refusal,
    };
    if !uri.is_http() {
        return Err(refuse(Refusal::NotHttp));
    }
    let url = uri
        .to_url()
        .map_err(|e| refuse(Refusal::Unparsable(e.reason)))?;
    // Asked of the URI as written too: the `url` crate drops an empty userinfo (`@host`).
    if uri.userinfo().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(refuse(Refusal::Userinfo));
    }
    let authority = authority_of(&url);
    Ok((url, authority))
}

/// `host` or `host:port`, the port only when it is not the scheme's default.
fn authority_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// The host and its kind, when it is a special-purpose address or a loopback name.
fn host_kind(url: &Url) -> Option<(String, SpecialAddress)> {
    let kind = match url.host()? {
        Host::Ipv4(v4) => SpecialAddress::of(IpAddr::V4(v4))?,
        Host::Ipv6(v6) => SpecialAddress::of(IpAddr::V6(v6))?,
        Host::Domain(name) => {
            // RFC 6761: `localhost` and its subdomains are loopback, with or without the
            // root's trailing dot; resolvers answer them without asking DNS.
            let name = name.strip_suffix('.').unwrap_or(name);
            if name == "localhost" || name.ends_with(".localhost") {
                SpecialAddress::Loopback
            } else {
                return None;
            }
        }
    };
    Some((url.host_str().unwrap_or_default().to_owned(), kind))
}
