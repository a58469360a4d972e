//! How a pool handler's [`Job`](crate::Job) records a checkpoint while its worker keeps the
//! delivery: the job asks through its worker's [`LeaseSlot`] (made once per worker), and
//! the worker, which polls the handler's future inside [`Serve`], starts the store's
//! checkpoint on its delivery and hands the future back; the job awaits it. Each handling
//! has a turn: a job kept past its handling (moved into a task, say) is refused, even for a
//! later lease of the same item.
//!
//! Per item this costs the worker a turn number, a waker registration and one flag load per
//! poll of the handler; the delivery never moves. A job asking from another task or a
//! blocking handler's thread wakes the worker through the registered waker.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

use futures::task::AtomicWaker;
use leaseq_core::{MessageId, ReceiptError};
use parking_lot::Mutex;

use crate::delivery::Delivery;
use crate::progress::{CheckpointError, Progress};
use crate::runtime::Runtime;
use crate::store::{Checkpointing, Store};
use crate::store_error::StoreError;

/// A worker's side of its jobs' checkpoints.
#[derive(Default)]
pub(crate) struct LeaseSlot {
    /// The running handling's turn (0 between handlings).
    turn: AtomicU64,
    /// The last turn handed out (written by the worker alone).
    seq: AtomicU64,
    /// A request waits for the worker.
    asked: AtomicBool,
    request: Mutex<Option<Request>>,
    /// The worker's task, woken by a request from elsewhere.
    worker: AtomicWaker,
}

/// A job's request and, once the worker saw it, its answer.
struct Request {
    turn: u64,
    id: MessageId,
    progress: Option<Progress>,
    answer: Option<Result<Checkpointing, ReceiptError>>,
    waker: Waker,
}

impl LeaseSlot {
    /// A handling begins: its turn.
    #[inline]
    pub(crate) fn begin(&self) -> u64 {
        let turn = self.seq.load(Ordering::Relaxed) + 1;
        self.seq.store(turn, Ordering::Relaxed);
        self.turn.store(turn, Ordering::Release);
        turn
    }

    /// The handling is over: a request still waiting is refused.
    #[inline]
    pub(crate) fn end(&self) {
        // SeqCst with the asker's flag then turn: one of the two sees the other.
        self.turn.store(0, Ordering::SeqCst);
        if self.asked.load(Ordering::SeqCst) {
            self.answer(|r| Err(ReceiptError::Released(r.id)));
        }
    }

    /// Answers the waiting request with `f`, waking its asker.
    fn answer(&self, f: impl FnOnce(&mut Request) -> Result<Checkpointing, ReceiptError>) {
        self.asked.store(false, Ordering::Release);
        let mut request = self.request.lock();
        if let Some(r) = request.as_mut().filter(|r| r.answer.is_none()) {
            r.answer = Some(f(r));
            r.waker.wake_by_ref();
        }
    }

    /// Records `progress` on the lease of turn `turn` through the worker.
    pub(crate) async fn checkpoint(
        &self,
        turn: u64,
        id: MessageId,
        progress: Progress,
    ) -> Result<(), CheckpointError> {
        let started = Ask {
            slot: self,
            turn,
            id,
            progress: Some(progress),
            sent: false,
        }
        .await?;
        started.await.map_err(CheckpointError::from)
    }
}

/// A job's request, until the worker answered it.
struct Ask<'a> {
    slot: &'a LeaseSlot,
    turn: u64,
    id: MessageId,
    progress: Option<Progress>,
    sent: bool,
}

impl Future for Ask<'_> {
    type Output = Result<Checkpointing, CheckpointError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let slot = self.slot;
        let id = self.id;
        let released = move || Poll::Ready(Err(CheckpointError::Stale(ReceiptError::Released(id))));
        if !self.sent {
            if slot.turn.load(Ordering::Acquire) != self.turn {
                return released();
            }
            let mut request = slot.request.lock();
            if request.as_ref().is_some_and(|r| r.answer.is_none()) {
                return Poll::Ready(Err(CheckpointError::Store(StoreError::not_done(
                    "another checkpoint of this job is under way",
                ))));
            }
            *request = Some(Request {
                turn: self.turn,
                id: self.id,
                progress: self.progress.take(),
                answer: None,
                waker: cx.waker().clone(),
            });
            drop(request);
            self.sent = true;
            slot.asked.store(true, Ordering::SeqCst);
            if slot.turn.load(Ordering::SeqCst) != self.turn {
                // The handling ended meanwhile (its end may not have seen the request).
                return released();
            }
            slot.worker.wake();
            return Poll::Pending;
        }
        let mut request = slot.request.lock();
        match request.as_mut() {
            Some(r) if r.turn == self.turn && r.id == self.id => match r.answer.take() {
                Some(answer) => {
                    *request = None;
                    Poll::Ready(answer.map_err(CheckpointError::Stale))
                }
                None => {
                    r.waker.clone_from(cx.waker());
                    Poll::Pending
                }
            },
            _ => released(),
        }
    }
}

impl Drop for Ask<'_> {
    fn drop(&mut self) {
        if self.sent {
            let mut request = self.slot.request.lock();
            if request
                .as_ref()
                .is_some_and(|r| r.turn == self.turn && r.id == self.id)
            {
                *request = None;
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// A handler's future, polled by its worker, which serves the job's checkpoint requests
    /// on `delivery` between polls.
    pub(crate) struct Serve<'a, F, T, R: Runtime, S: Store<T, Runtime = R>> {
        #[pin]
        pub(crate) fut: F,
        pub(crate) slot: &'a LeaseSlot,
        pub(crate) delivery: &'a Delivery<T, R, S>,
        pub(crate) turn: u64,
    }
}

impl<F: Future, T, R: Runtime, S: Store<T, Runtime = R>> Future for Serve<'_, F, T, R, S> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        this.slot.worker.register(cx.waker());
        loop {
            if let Poll::Ready(out) = this.fut.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            if !this.slot.asked.load(Ordering::Acquire) {
                return Poll::Pending;
            }
            let (turn, delivery) = (*this.turn, *this.delivery);
            this.slot.answer(|r| match r.progress.take() {
                Some(p) if r.turn == turn => delivery.checkpoint_future(p),
                _ => Err(ReceiptError::Released(r.id)),
            });
        }
    }
}
