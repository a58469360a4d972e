//! `leaseq postgres <URL> history <QUEUE>`: the record of a retention-on queue's finished
//! jobs, as a table and as JSON, all and filtered by kind and outcome, paged, on the
//! machine's Postgres server (skipping loudly without one, failing then with
//! `LEASEQ_PG_REQUIRED=1`); a bad outcome is a usage error. Prints what it showed.

use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use leaseq_async::Config;
use leaseq_postgres::{BytesCodec, Options, Postgres};
use serde_json::Value;

const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

fn leaseq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leaseq"))
        .args(args)
        .output()
        .expect("run leaseq")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// A router job's stored bytes: the kind's length, the kind, the JSON args.
fn job(kind: &str) -> Vec<u8> {
    let mut b = vec![kind.len() as u8];
    b.extend_from_slice(kind.as_bytes());
    b.extend_from_slice(b"{}");
    b
}

#[test]
fn postgres_history_as_a_table_and_json() {
    let url = std::env::var("LEASEQ_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_string());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let reached = rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        client.simple_query("SELECT 1").await.map(drop)
    });
    if let Err(e) = reached {
        if std::env::var("LEASEQ_PG_REQUIRED").as_deref() == Ok("1") {
            panic!("LEASEQ_PG_REQUIRED=1 but PostgreSQL at {url:?} cannot be reached: {e}");
        }
        eprintln!("\n!!! SKIPPED: PostgreSQL at {url:?} cannot be reached ({e}).\n");
        return;
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let schema = format!("leaseq_cli_history_{}_{nanos}", std::process::id());
    rt.block_on(async {
        let options = Options::new()
            .schema(&schema)
            .pool_size(2)
            .retention(Duration::from_secs(3600));
        let q = leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(30)))
            .name("mail".to_string())
            .codec(BytesCodec)
            .open(Postgres::url(&url).options(options))
            .await
            .unwrap();
        for kind in ["email", "fax", "email"] {
            q.push(job(kind)).await.unwrap();
            let d = q.receive().await.unwrap();
            if kind == "fax" {
                d.dead_letter("no line").await.unwrap();
            } else {
                d.ack().await.unwrap();
            }
        }
        q.close().await.unwrap();
    });
    let run = |extra: &[&str]| {
        let mut a = vec![
            "postgres",
            url.as_str(),
            "--schema",
            schema.as_str(),
            "history",
            "mail",
        ];
        a.extend_from_slice(extra);
        leaseq(&a)
    };
    let table = stdout(&run(&[]));
    println!("{table}");
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].trim_start().starts_with("seq"), "{table}");
    assert_eq!(lines.len(), 4, "{table}");
    assert!(
        lines[2].contains("fax") && lines[2].contains("dead"),
        "{table}"
    );
    assert!(
        lines[2].contains("rejected") && lines[2].contains("no line"),
        "{table}"
    );
    assert!(
        lines[1].contains("email") && lines[1].contains("acked"),
        "{table}"
    );

    let json = stdout(&run(&["--json"]));
    println!("{json}");
    let v: Value = serde_json::from_str(&json).unwrap();
    let all = v.as_array().unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[1]["kind"], "fax");
    assert_eq!(all[1]["outcome"], "dead");
    assert_eq!(all[1]["last_error"], "no line");
    assert_eq!(all[0]["attempts"], 1);
    assert!(all[0]["duration_ms"].as_f64().is_some());
    assert!(all[0]["finished_at_ms"].as_i64().unwrap() >= all[0]["pushed_at_ms"].as_i64().unwrap());

    // Filtered, and paged after the first entry.
    let email = stdout(&run(&["--kind", "email", "--outcome", "acked", "--json"]));
    let email: Value = serde_json::from_str(&email).unwrap();
    assert_eq!(email.as_array().unwrap().len(), 2);
    let first = all[0]["seq"].as_u64().unwrap().to_string();
    let rest = stdout(&run(&["--after", &first, "--limit", "1", "--json"]));
    let rest: Value = serde_json::from_str(&rest).unwrap();
    assert_eq!(rest.as_array().unwrap().len(), 1);
    assert_eq!(rest[0]["seq"], all[1]["seq"]);
    // A queue the schema does not know: an error (exit 1), as for every command.
    let none = leaseq(&[
        "postgres",
        url.as_str(),
        "--schema",
        schema.as_str(),
        "history",
        "other",
    ]);
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no queue \"other\""));
    // An outcome that is none: usage, exit 2.
    let bad = run(&["--outcome", "done"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("acked, dead, cancelled, expired"));

    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        client
            .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .await
            .unwrap();
    });
}
