//! An object store of a test's own: object_store's trait over another store (the
//! in-memory one, say), with hooks on what a listing gives, on which reads fail and on
//! whether it may be written, for what a real store does and the in-memory one cannot
//! be made to (a folder marker listed beside its object, an object's time, a store away
//! for a moment, credentials that may only read).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt as _;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// What a listing gives for each object the inner store lists.
type Listed = dyn Fn(ObjectMeta) -> Vec<ObjectMeta> + Send + Sync;
/// Whether a read (`get_opts`, a HEAD among them) of a key fails.
type Fails = dyn Fn(&Path, &GetOptions) -> bool + Send + Sync;

/// `inner`, every request passed to it but where a hook says otherwise.
pub struct Hooked {
    inner: Arc<dyn ObjectStore>,
    listed: Option<Arc<Listed>>,
    fails: Option<Arc<Fails>>,
    read_only: bool,
    /// Writes refused by a read-only store.
    refusals: AtomicUsize,
}

impl Hooked {
    /// `inner` as it is, until a hook is set.
    pub fn new(inner: Arc<dyn ObjectStore>) -> Hooked {
        Hooked {
            inner,
            listed: None,
            fails: None,
            read_only: false,
            refusals: AtomicUsize::new(0),
        }
    }

    /// How many writes a read-only store refused: none, for a caller that writes
    /// nothing (whose refused writes might otherwise go unseen, their errors ignored).
    pub fn refusals(&self) -> usize {
        self.refusals.load(Ordering::Relaxed)
    }

    /// Every write (a PUT, a multipart upload, a DELETE, a copy) refused, as a store
    /// refuses credentials that may only read: whatever writes, if only for a moment (a
    /// key written and deleted), fails.
    pub fn read_only(mut self) -> Hooked {
        self.read_only = true;
        self
    }

    /// The refusal of a write to `location` by a read-only store.
    fn refuse(&self, location: &Path) -> object_store::Result<()> {
        if !self.read_only {
            return Ok(());
        }
        self.refusals.fetch_add(1, Ordering::Relaxed);
        Err(object_store::Error::PermissionDenied {
            path: location.to_string(),
            source: "the credentials may only read".into(),
        })
    }

    /// Each object a listing of `inner` gives becomes what `listed` makes of it (itself
    /// with another time, or with another entry beside it, or nothing). `list` only (and
    /// `list_with_offset`, which the trait makes of it): `list_with_delimiter` gives
    /// `inner`'s.
    pub fn listing(
        mut self,
        listed: impl Fn(ObjectMeta) -> Vec<ObjectMeta> + Send + Sync + 'static,
    ) -> Hooked {
        self.listed = Some(Arc::new(listed));
        self
    }

    /// A read for which `fails` says so fails, as a store away for a moment does (a
    /// generic error, not "not found").
    pub fn failing(
        mut self,
        fails: impl Fn(&Path, &GetOptions) -> bool + Send + Sync + 'static,
    ) -> Hooked {
        self.fails = Some(Arc::new(fails));
        self
    }
}

impl fmt::Debug for Hooked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooked")
            .field("inner", &self.inner)
            .field("listed", &self.listed.is_some())
            .field("fails", &self.fails.is_some())
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl fmt::Display for Hooked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hooked({})", self.inner)
    }
}

#[async_trait::async_trait]
impl ObjectStore for Hooked {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.refuse(location)?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.refuse(location)?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if self
            .fails
            .as_ref()
            .is_some_and(|fails| fails(location, &options))
        {
            return Err(object_store::Error::Generic {
                store: "test",
                source: "the store is away".into(),
            });
        }
        self.inner.get_opts(location, options).await
    }

    async fn delete(&self, location: &Path) -> object_store::Result<()> {
        self.refuse(location)?;
        self.inner.delete(location).await
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let listed = self.inner.list(prefix);
        let Some(hook) = self.listed.clone() else {
            return listed;
        };
        listed
            .flat_map(move |meta| {
                futures::stream::iter(match meta {
                    Ok(meta) => hook(meta).into_iter().map(Ok).collect(),
                    Err(e) => vec![Err(e)],
                })
            })
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy(&self, from: &Path, to: &Path) -> object_store::Result<()> {
        self.refuse(to)?;
        self.inner.copy(from, to).await
    }

    async fn copy_if_not_exists(&self, from: &Path, to: &Path) -> object_store::Result<()> {
        self.refuse(to)?;
        self.inner.copy_if_not_exists(from, to).await
    }
}

/// Every key `store` lists, in its order: of a store whose listing needs no runtime (the
/// in-memory one, or [`Hooked`] over it), as a test's check of what a run left.
pub fn keys(store: &dyn ObjectStore) -> Vec<String> {
    futures::executor::block_on(
        store
            .list(None)
            .map(|meta| meta.map(|meta| meta.location.to_string()))
            .collect::<Vec<_>>(),
    )
    .into_iter()
    .collect::<object_store::Result<_>>()
    .unwrap_or_else(|e| panic!("listing {store}: {e}"))
}
