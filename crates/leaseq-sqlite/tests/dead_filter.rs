//! Bulk operator calls on a SQLite queue with a `DeadFilter`: redrive and purge by reason,
//! by job kind (the envelope's), both, and all; what they did is in the file after a
//! reopen.

use std::path::{Path, PathBuf};
use std::time::Duration;

use leaseq_async::{Config, DeadFilter, Failure, Page, Reason};
use leaseq_smol::SmolRuntime;
use leaseq_sqlite::{BytesCodec, Options, SqliteQueue};

type Queue = SqliteQueue<Vec<u8>, SmolRuntime, BytesCodec>;

fn temp(name: &str) -> PathBuf {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!("leaseq-{name}-{}-{n}.db", std::process::id()))
}

fn open(path: &Path) -> Queue {
    smol::block_on(
        leaseq_async::LeaseQueue::builder(
            Config::new(Duration::from_secs(30)).with_max_attempts(1),
        )
        .runtime(SmolRuntime::global())
        .codec(BytesCodec)
        .open(leaseq_sqlite::Sqlite::file(path).options(Options::default())),
    )
    .unwrap()
}

/// An envelope's bytes: the kind's length, the kind, the arguments.
fn envelope(kind: &str, args: &str) -> Vec<u8> {
    [&[kind.len() as u8][..], kind.as_bytes(), args.as_bytes()].concat()
}

async fn dead_items(q: &Queue) -> Vec<Vec<u8>> {
    let letters = q.dead_letters(Page::ALL).await.unwrap();
    letters.into_iter().map(|l| l.item.unwrap()).collect()
}

#[test]
fn bulk_calls_take_only_the_dead_letters_their_filter_names_and_commit_it() {
    let path = temp("dead-filter");
    smol::block_on(async {
        let q = open(&path);
        let items = [
            (envelope("email", "a"), true),
            (envelope("email", "b"), false),
            (envelope("sms", "c"), true),
            (b"raw".to_vec(), true),
        ];
        for (item, _) in &items {
            q.push(item.clone()).await.unwrap();
        }
        for (_, nack) in &items {
            let d = q.receive().await.unwrap();
            if *nack {
                d.nack_with(Failure::error("503")).await.unwrap();
            } else {
                d.dead_letter("bad address").await.unwrap();
            }
        }
        let none = DeadFilter::all().reason(Reason::TimedOut);
        assert_eq!(q.redrive_matching(none.clone()).await, Ok(0));
        assert_eq!(q.purge_dead_matching(none).await, Ok(0));

        let nacked_email = DeadFilter::all().reason(Reason::Nacked).kind("email");
        assert_eq!(q.redrive_matching(nacked_email).await, Ok(1));
        assert_eq!(
            q.purge_dead_matching(DeadFilter::all().kind("sms")).await,
            Ok(1)
        );
        assert_eq!(
            dead_items(&q).await,
            vec![envelope("email", "b"), b"raw".to_vec()]
        );
        q.close().await.unwrap();
        drop(q);

        // In the file: a back, c gone, b and the raw item still dead.
        let q = open(&path);
        let live = q.peek(Page::ALL).await.unwrap();
        assert_eq!(live.len(), 1);
        assert_eq!(
            dead_items(&q).await,
            vec![envelope("email", "b"), b"raw".to_vec()]
        );
        assert_eq!(
            q.redrive_matching(DeadFilter::all().reason(Reason::Rejected))
                .await,
            Ok(1)
        );
        assert_eq!(q.purge_dead_letters().await, Ok(1));
        assert_eq!(q.stats().dead, 0);
        assert_eq!(q.stats().live(), 2);
    });
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
