//! Sources in pipelines: the [`BatchSink`] adapter over [`Pipeline::submit`] given to every
//! source plugin.

use std::sync::Arc;
use std::time::Instant;

use tsfiled_connectors::sink::{BatchSink, Durable, SinkError, SinkFuture, SinkOutcome};
use tsfiled_connectors::Batch;

use crate::pipeline::{Pipeline, SubmitOutcome};
use crate::{Error, Refusal};

/// A pipeline seen as a connector's [`BatchSink`], labelled with the source's name.
pub struct PipelineSink {
    pipeline: Arc<Pipeline>,
    source: String,
}

impl PipelineSink {
    /// A sink that submits to `pipeline` as source `source`.
    pub fn new(pipeline: Arc<Pipeline>, source: impl Into<String>) -> PipelineSink {
        PipelineSink {
            pipeline,
            source: source.into(),
        }
    }
}

fn outcome(o: SubmitOutcome) -> SinkOutcome {
    SinkOutcome {
        accepted: o.accepted,
        rejected: o.rejected,
        rejections: o.rejections,
    }
}

fn error(e: Error) -> SinkError {
    match e.refusal() {
        Some(Refusal::Full {
            reason,
            retry_after,
        }) => SinkError::Full {
            reason,
            retry_after,
        },
        Some(Refusal::Closed) => SinkError::Closed,
        None => SinkError::Io(e.to_string()),
    }
}

impl BatchSink for PipelineSink {
    fn submit(&self, batch: Batch, received: Instant) -> SinkFuture<'_> {
        Box::pin(async move {
            self.pipeline
                .submit(&self.source, batch, received)
                .await
                .map(outcome)
                .map_err(error)
        })
    }

    /// Admits within the call ([`Pipeline::admit`]), so batches enter the write-ahead log in
    /// call order; while intake must wait for the engine ([`Pipeline::must_wait`]), the
    /// returned future waits for room and admits then (batches admitted meanwhile wait
    /// behind it).
    fn admit(self: Arc<Self>, batch: Batch, received: Instant) -> Result<Durable, SinkError> {
        if let Some(place) = self.pipeline.must_wait() {
            return Ok(Box::pin(async move {
                self.pipeline.room(&self.source).await.map_err(error)?;
                let admitted = self
                    .pipeline
                    .admit(&self.source, batch, received)
                    .map_err(error)?;
                drop(place);
                self.pipeline
                    .durable(&self.source, admitted)
                    .await
                    .map(outcome)
                    .map_err(error)
            }));
        }
        let admitted = self
            .pipeline
            .admit(&self.source, batch, received)
            .map_err(error)?;
        Ok(Box::pin(async move {
            self.pipeline
                .durable(&self.source, admitted)
                .await
                .map(outcome)
                .map_err(error)
        }))
    }
}
