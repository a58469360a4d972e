//! The rows: a plain channel, a lease queue without and with a heartbeat, leaseq's `Pool`;
//! each run to the cut and its figures read.

use super::*;

impl Row {
    pub(super) fn tag(self) -> &'static str {
        match self {
            Row::Plain => "(a)",
            Row::NoHeartbeat => "(b)",
            Row::NoHeartbeatStrict => "(b')",
            Row::Heartbeat => "(c)",
            Row::HandBack => "(d)",
        }
    }

    pub(super) fn label(self) -> &'static str {
        match self {
            Row::Plain => "(a) plain channel, timeout drops the item",
            Row::NoHeartbeat => "(b) lease queue, no heartbeat",
            Row::NoHeartbeatStrict => "(b') as (b), acks after the deadline refused",
            Row::Heartbeat => "(c) lease queue, heartbeat",
            Row::HandBack => "(d) heartbeat + hand back on timeout (Pool)",
        }
    }

    /// The Python asyncio reference (for (d): what issue 4 expects): processed, lost,
    /// dead-lettered, twice, late, retrying.
    pub(super) fn reference(self) -> [&'static str; 6] {
        match self {
            Row::Plain => ["490", "10", "-", "-", "-", "-"],
            Row::NoHeartbeat => ["490", "0", "10", "~54", "~54", "0"],
            Row::Heartbeat => ["490", "0", "4", "0", "0", "6"],
            Row::HandBack => ["-", "-", "10", "-", "-", "-"],
            Row::NoHeartbeatStrict => ["-", "-", "-", "-", "-", "-"],
        }
    }
}

impl PlainRx {
    pub(super) async fn recv(&self) -> Option<u32> {
        match self {
            PlainRx::Tokio(rx) => rx.lock().await.recv().await,
            PlainRx::Smol(rx) => rx.recv().await.ok(),
        }
    }
}

pub(super) async fn run_row<R: Runtime>(
    rt: R,
    sc: Arc<Scenario>,
    row: Row,
    flavor: Flavor,
) -> RowResult {
    let wall = Instant::now();
    let start = rt.now();
    let cut_at = start.saturating_add(sc.cut);
    let tracker = Arc::new(Tracker::new(sc.items));
    let mut result = match row {
        Row::Plain => plain_row(&rt, &sc, &tracker, flavor, cut_at).await,
        Row::NoHeartbeat | Row::NoHeartbeatStrict | Row::Heartbeat => {
            lease_row(&rt, &sc, &tracker, row, cut_at).await
        }
        Row::HandBack => pool_row(&rt, &sc, &tracker, cut_at).await,
    };
    result.processed = Tracker::count(&tracker.finished, |n| n > 0);
    result.twice = Tracker::count(&tracker.finished, |n| n > 1);
    if let Some(at) = result.last_hung_dead_at.as_mut() {
        *at = at.saturating_sub(start.as_duration());
    }
    result.wall = wall.elapsed();
    ROWS_DONE.fetch_add(1, Ordering::Relaxed);
    result
}

/// (a): workers take items from a channel; a timeout drops the item.
pub(super) async fn plain_row<R: Runtime>(
    rt: &R,
    sc: &Arc<Scenario>,
    tracker: &Arc<Tracker>,
    flavor: Flavor,
    cut_at: leaseq_async::Timestamp,
) -> RowResult {
    let rx = match flavor {
        Flavor::Tokio => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            for i in 0..sc.items {
                tx.send(i).expect("receiver is alive");
            }
            PlainRx::Tokio(Arc::new(tokio::sync::Mutex::new(rx)))
        }
        Flavor::Smol => {
            let (tx, rx) = async_channel::unbounded();
            for i in 0..sc.items {
                tx.try_send(i).expect("unbounded channel takes every item");
            }
            PlainRx::Smol(rx)
        }
    };
    let mut tasks: Vec<R::Task> = (0..sc.workers)
        .map(|_| {
            let (rt2, sc, tracker, rx) = (rt.clone(), sc.clone(), tracker.clone(), rx.clone());
            rt.spawn(Box::pin(async move {
                while let Some(item) = rx.recv().await {
                    let give_up = pin!(rt2.sleep_until(rt2.now().saturating_add(sc.item_timeout)));
                    let handled = pin!(work(&rt2, &sc, &tracker, item));
                    if let Either::Left(_) = select(give_up, handled).await {
                        tracker.dropped[item as usize].fetch_add(1, Ordering::AcqRel);
                    }
                }
            }))
        })
        .collect();
    rt.sleep_until(cut_at).await;
    let processed = Tracker::count(&tracker.finished, |n| n > 0);
    let lost = (0..sc.items as usize)
        .filter(|&i| {
            tracker.dropped[i].load(Ordering::Acquire) > 0
                && tracker.finished[i].load(Ordering::Acquire) == 0
        })
        .count() as u64;
    for task in &mut tasks {
        rt.abort(task);
    }
    RowResult {
        lost,
        retrying: (sc.items as u64).saturating_sub(processed + lost),
        ..RowResult::default()
    }
}

/// (b) and (c): workers receive by hand; at the item timeout they give up and abandon the
/// delivery (kept aside, neither acked nor handed back), so the item comes back only when
/// its lease runs out. In (c) the queue's heartbeat extends the lease every third of the
/// visibility while the handler runs, and stops when the worker gives up.
pub(super) async fn lease_row<R: Runtime>(
    rt: &R,
    sc: &Arc<Scenario>,
    tracker: &Arc<Tracker>,
    row: Row,
    cut_at: leaseq_async::Timestamp,
) -> RowResult {
    let queue = new_queue(rt, sc);
    let abandoned: Arc<Mutex<Vec<Delivery<u32, R>>>> = Arc::default();
    let mut tasks: Vec<R::Task> = (0..sc.workers)
        .map(|_| {
            let fut = lease_worker(
                queue.clone(),
                sc.clone(),
                tracker.clone(),
                row,
                abandoned.clone(),
            );
            rt.spawn(Box::pin(fut))
        })
        .collect();
    rt.sleep_until(cut_at).await;
    let mut result = queue_figures(&queue, sc);
    let refused = tracker.refused_late.load(Ordering::Acquire) as u64;
    result.late_acks += refused;
    result.late_refused += refused;
    for task in &mut tasks {
        rt.abort(task);
    }
    queue.close();
    // Only now may the abandoned deliveries go (dropped, they would hand their items back).
    abandoned.lock().unwrap_or_else(|e| e.into_inner()).clear();
    result
}

pub(super) async fn lease_worker<R: Runtime>(
    queue: LeaseQueue<u32, R>,
    sc: Arc<Scenario>,
    tracker: Arc<Tracker>,
    row: Row,
    abandoned: Arc<Mutex<Vec<Delivery<u32, R>>>>,
) {
    let rt = queue.runtime().clone();
    let heartbeat = row == Row::Heartbeat;
    loop {
        let next = if heartbeat {
            queue.receive_with_heartbeat().await
        } else {
            queue.receive().await
        };
        let Some(mut delivery) = next else { break };
        let item = *delivery.item();
        let finished = {
            let give_up = pin!(rt.sleep_until(rt.now().saturating_add(sc.item_timeout)));
            let handled = pin!(work(&rt, &sc, &tracker, item));
            matches!(select(give_up, handled).await, Either::Right(_))
        };
        if !finished {
            // The worker gives up: its heartbeat stops, so the lease runs out.
            delivery.stop_heartbeat();
        }
        if finished && row == Row::NoHeartbeatStrict && delivery.is_lease_lost() {
            // What a queue that refuses every ack after the deadline would do: the ack is
            // refused and the item, already back in the queue, will run again.
            tracker.refused_late.fetch_add(1, Ordering::AcqRel);
            abandoned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(delivery);
        } else if finished {
            // Refused if the lease ran out and the item went to another worker (a stale
            // ack); the queue counts it either way.
            let _ = delivery.ack().await;
        } else {
            abandoned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(delivery);
        }
    }
}

/// (d): leaseq's pool with heartbeat and a fixed item timeout, which hands the item back
/// (through the queue's attempts and dead letters) the moment it fires.
pub(super) async fn pool_row<R: Runtime>(
    rt: &R,
    sc: &Arc<Scenario>,
    tracker: &Arc<Tracker>,
    cut_at: leaseq_async::Timestamp,
) -> RowResult {
    let queue = new_queue(rt, sc);
    let (rt2, sc2, tracker2) = (rt.clone(), sc.clone(), tracker.clone());
    let pool = Pool::builder(queue.clone())
        .workers(sc.workers)
        .item_timeout(ItemTimeout::Fixed(sc.item_timeout))
        .heartbeat(true)
        .spawn(move |job| {
            let (rt, sc, tracker) = (rt2.clone(), sc2.clone(), tracker2.clone());
            async move {
                work(&rt, &sc, &tracker, job.item).await;
                Ok(())
            }
        });
    rt.sleep_until(cut_at).await;
    let result = queue_figures(&queue, sc);
    let _ = pool.shutdown(Duration::ZERO).await;
    queue.close();
    result
}

pub(super) fn new_queue<R: Runtime>(rt: &R, sc: &Scenario) -> LeaseQueue<u32, R> {
    // Retried at once, as the reference broker does: the figures compare delivery rules,
    // not backoff (the default config would back off 1 s, longer than these scenarios).
    let config = Config::new(sc.visibility)
        .with_max_attempts(sc.max_attempts)
        .with_backoff(Backoff::None);
    // The heartbeat period: a third of the visibility (leaseq's default), in whole
    // milliseconds so that tokio's millisecond timer and SimRuntime's nanosecond one beat at
    // the same instants.
    let every = Duration::from_millis((sc.visibility / 3).as_millis() as u64);
    let queue = LeaseQueue::<u32, R>::builder(config)
        .heartbeat_every(every)
        .runtime(rt.clone())
        .build()
        .expect("a valid config");
    if queue.try_push_batch(0..sc.items).is_err() {
        unreachable!("an open queue without capacity limit takes every item");
    }
    queue
}

/// The queue's side of a lease row's figures, read at the cut.
pub(super) fn queue_figures<R: Runtime>(queue: &LeaseQueue<u32, R>, sc: &Scenario) -> RowResult {
    let stats = queue.stats();
    if let Err(e) = stats.check_conservation() {
        eprintln!("warning: {e}");
    }
    let (hung_dead, last) = {
        let letters = queue.store().dead_letters();
        let mut n = 0;
        let mut last = None;
        for letter in &letters {
            if sc.hung[letter.item as usize] {
                n += 1;
                last = last.max(Some(letter.at.as_duration()));
            }
        }
        (n, last)
    };
    RowResult {
        lost: stats
            .pushed
            .saturating_sub(stats.acked + stats.dead_lettered + stats.live()),
        dead_lettered: stats.dead_lettered,
        late_acks: stats.late_acks_stale + stats.late_acks_unclaimed,
        late_stale: stats.late_acks_stale,
        late_unclaimed: stats.late_acks_unclaimed,
        retrying: stats.live(),
        hung_dead,
        last_hung_dead_at: last,
        redelivered: stats.redelivered,
        lease_expired: stats.lease_expired,
        ..RowResult::default()
    }
}
