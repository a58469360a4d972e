//! The test subscriber: every event and span recorded with its fields; a run traced under
//! it; the queue and driver helpers.

use super::*;

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
}

impl Subscriber for Collector {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = BTreeMap::new();
        span.record(&mut Fields(&mut fields));
        self.log.lock().unwrap().spans.push(Seen {
            name: span.metadata().name().to_string(),
            level: *span.metadata().level(),
            fields,
            parent: None,
            id: Some(id),
        });
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let name = fields.remove("message").unwrap_or_default();
        let mut log = self.log.lock().unwrap();
        let parent = log.entered.last().copied();
        log.events.push(Seen {
            name,
            level: *event.metadata().level(),
            fields,
            parent,
            id: None,
        });
    }
    fn enter(&self, span: &Id) {
        self.log.lock().unwrap().entered.push(span.into_u64());
    }
    fn exit(&self, span: &Id) {
        let mut log = self.log.lock().unwrap();
        if let Some(at) = log.entered.iter().rposition(|&s| s == span.into_u64()) {
            log.entered.remove(at);
        }
    }
}

impl Collector {
    pub(super) fn events(&self, message: &str) -> Vec<Seen> {
        let log = self.log.lock().unwrap();
        log.events
            .iter()
            .filter(|e| e.name == message)
            .cloned()
            .collect()
    }

    /// The events with `message` whose field `key` reads `value`.
    pub(super) fn events_with(&self, message: &str, key: &str, value: &str) -> Vec<Seen> {
        self.events(message)
            .into_iter()
            .filter(|e| e.fields.get(key).map(String::as_str) == Some(value))
            .collect()
    }
}

/// Runs `body` on a fresh virtual-time runtime with the collector as the subscriber.
pub(super) fn traced<F: Future<Output = ()>>(
    body: impl FnOnce(SimRuntime, Collector) -> F,
) -> Collector {
    let collector = Collector::default();
    let rt = SimRuntime::new();
    tracing::subscriber::with_default(collector.clone(), || {
        rt.block_on(body(rt.clone(), collector.clone()))
    });
    collector
}

/// Lets the queue's driver run: a short sleep that nothing else is scheduled in. Its own
/// timer is not what wakes the driver (that is the lock guard, for events waiting).
pub(super) async fn let_driver_run(rt: &SimRuntime) {
    sim::sleep(rt, Duration::from_millis(1)).await;
}

pub(super) const SECOND: Duration = Duration::from_secs(1);

pub(super) fn queue(
    rt: &SimRuntime,
    name: &'static str,
    config: Config,
) -> LeaseQueue<u32, SimRuntime> {
    sim::named_queue(rt, name, config)
}
