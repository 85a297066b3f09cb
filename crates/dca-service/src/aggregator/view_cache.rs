//! Each job's participant view, built once per status change and shared by every poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::aggregator::*;
use crate::protocol::job::view::{ParticipantView, SharedParticipantView};
use crate::{Error, Result};

impl Aggregator {
    /// Job `id` as the participant whose token hashes to `token_sha256` (hex) sees it; `None`
    /// for a job that does not exist or whose roster does not list the token. The view is built
    /// once per status change (one parse of the O(N) status) and shared by every poll.
    pub fn participant_view(
        &self,
        id: &str,
        token_sha256: &str,
    ) -> Result<Option<ParticipantView>> {
        // Another process sharing the store may have changed the job: the cached view stands
        // only while the job's row is the one it was built from.
        let Some(version) = self.store.job_version(id)? else {
            return Ok(None);
        };
        let mut views = self
            .participant_views
            .0
            .lock()
            .map_err(|_| Error::Io(std::io::Error::other("participant views lock poisoned")))?;
        let shared = match views.get(id) {
            Some((built_from, shared)) if *built_from == version => shared.clone(),
            _ => {
                let Some((spec, status)) = self.job(id)? else {
                    return Ok(None);
                };
                let shared = Arc::new(SharedParticipantView::build(
                    &spec,
                    &status,
                    self.nodes.urls(),
                )?);
                views.insert(id.to_string(), (version, shared.clone()));
                shared
            }
        };
        drop(views);
        Ok(shared.for_token(token_sha256))
    }

    /// Every job whose roster lists the token hashing to `token_sha256` (hex), as that
    /// participant sees it, oldest first: from the shared views (built once per status change),
    /// so N participants asking cost O(N) views, not N reads of every job.
    pub fn participant_jobs(&self, token_sha256: &str) -> Result<Vec<ParticipantView>> {
        let mut out = Vec::new();
        for id in self.store.job_ids()? {
            if let Some(view) = self.participant_view(&id, token_sha256)? {
                out.push(view);
            }
        }
        Ok(out)
    }
}

/// A job's shared participant view and the version of the job's row it was built from.
type CachedView = (Vec<u8>, Arc<SharedParticipantView>);

/// The views by job id.
#[derive(Default)]
pub(in crate::aggregator) struct ViewCache(Mutex<HashMap<String, CachedView>>);

/// Drops a job's shared participant view when a status change is done (or failed), so that the
/// next poll rebuilds it from the store.
pub(in crate::aggregator) struct ForgetView<'a>(
    pub(in crate::aggregator) &'a ViewCache,
    pub(in crate::aggregator) &'a str,
);

impl Drop for ForgetView<'_> {
    fn drop(&mut self) {
        if let Ok(mut views) = self.0.0.lock() {
            views.remove(self.1);
        }
    }
}
