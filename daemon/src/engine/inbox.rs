//! The engine's inbox: the messages of its thread, and the records a long flush takes in
//! between its slices so that intake, which waits while the engine's backlog is over its
//! limit, waits at most about a slice's time.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Engine, EngineMsg};
use crate::wal::Lsn;

/// The engine thread's messages.
#[derive(Default)]
pub(super) struct Inbox {
    rx: Option<Receiver<EngineMsg>>,
    /// Messages other than records met while a flush took records in, for the loop.
    held: VecDeque<EngineMsg>,
    /// Set while a flush takes records in: they are only inserted into the memtables (no
    /// flush, no seal of a rolled partition, which the flush's file cannot take meanwhile).
    pub(super) taking_in: bool,
    /// Partitions the records taken in touched, for the next record applied after the flush.
    pub(super) touched: Vec<(Arc<str>, i64)>,
}

impl Engine {
    /// The engine thread reads its messages from `rx`.
    pub(super) fn attach_inbox(&mut self, rx: Receiver<EngineMsg>) {
        self.inbox.rx = Some(rx);
    }

    /// The next message: one held by a flush first, else one from the channel (within
    /// `timeout`).
    pub(super) fn next_msg(&mut self, timeout: Duration) -> Result<EngineMsg, RecvTimeoutError> {
        if let Some(m) = self.inbox.held.pop_front() {
            return Ok(m);
        }
        match &self.inbox.rx {
            Some(rx) => rx.recv_timeout(timeout),
            None => Err(RecvTimeoutError::Disconnected),
        }
    }

    /// The next message if one is there.
    pub(super) fn try_next_msg(&mut self) -> Option<EngineMsg> {
        self.inbox
            .held
            .pop_front()
            .or_else(|| self.inbox.rx.as_ref().and_then(|rx| rx.try_recv().ok()))
    }

    /// Applies a record the log delivered (it leaves the backlog).
    pub(super) fn write_live(&mut self, lsn: Lsn, payload: Vec<u8>, received: Instant) {
        if let Some(gate) = &self.opts.hooks.engine_gate {
            gate.wait();
        }
        let bytes = payload.capacity();
        self.pace();
        self.write(lsn, &payload, received);
        drop(payload);
        if let Some(b) = &self.backlog {
            b.done(bytes);
        }
        if let Some(p) = &self.progress {
            p.complete(1);
        }
    }

    /// Between two slices of a flush: applies the records waiting in the channel, as many
    /// bytes as the backlog held on entry (records arriving meanwhile wait for the next
    /// slice, so this ends even under a steady stream). It stops at any other message, which
    /// it holds for the loop.
    pub(super) fn take_in(&mut self) {
        let Some(backlog) = self.backlog.clone() else {
            return;
        };
        // Messages keep their order: none is taken in past one held for the loop. Where
        // records past the backlog's memory limit stay in the log, intake does not wait for
        // the flush: taking records in would only grow the memtables past their budget.
        if self.inbox.taking_in
            || self.opts.hooks.stall_engine
            || !self.inbox.held.is_empty()
            || backlog.leaves_in_log()
        {
            return;
        }
        let mut left = backlog.bytes();
        self.inbox.taking_in = true;
        while left > 0 {
            let Some(m) = self.inbox.rx.as_ref().and_then(|rx| rx.try_recv().ok()) else {
                break;
            };
            match m {
                EngineMsg::Write {
                    lsn,
                    payload,
                    received,
                } => {
                    left = left.saturating_sub(payload.capacity());
                    self.write_live(lsn, payload, received);
                }
                other => {
                    self.inbox.held.push_back(other);
                    break;
                }
            }
        }
        self.inbox.taking_in = false;
    }
}
