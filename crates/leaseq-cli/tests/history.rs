//! `leaseq postgres <URL> history <QUEUE>`: the record of a retention-on queue's finished
//! jobs, as a table and as JSON, all and filtered by kind and outcome, paged, on the
//! machine's Postgres server (skipping loudly without one, failing then with
//! `LEASEQ_PG_REQUIRED=1`); a bad outcome is a usage error. Prints what it showed.

mod common;

use std::time::Duration;

use common::postgres;
use leaseq_async::Config;
use leaseq_postgres::{BytesCodec, Options, Postgres};
use leaseq_test_kit::envelope::envelope;
use leaseq_test_kit::output::stdout;
use leaseq_test_kit::pg::{runtime, with_scratch_schema};
use serde_json::Value;

#[test]
fn postgres_history_as_a_table_and_json() {
    with_scratch_schema("cli_history", |url, schema| {
        runtime().block_on(async {
            let options = Options::new()
                .schema(schema)
                .pool_size(2)
                .retention(Duration::from_secs(3600));
            let q =
                leaseq_tokio::LeaseQueue::<Vec<u8>>::builder(Config::new(Duration::from_secs(30)))
                    .name("mail".to_string())
                    .codec(BytesCodec)
                    .open(Postgres::url(url).options(options))
                    .await
                    .unwrap();
            for kind in ["email", "fax", "email"] {
                q.push(envelope(kind, "{}")).await.unwrap();
                let d = q.receive().await.unwrap();
                if kind == "fax" {
                    d.dead_letter("no line").await.unwrap();
                } else {
                    d.ack().await.unwrap();
                }
            }
            q.close().await.unwrap();
        });
        let run =
            |extra: &[&str]| postgres(url, schema, &[&["history", "mail"][..], extra].concat());
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
        assert!(
            all[0]["finished_at_ms"].as_i64().unwrap() >= all[0]["pushed_at_ms"].as_i64().unwrap()
        );

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
        let none = postgres(url, schema, &["history", "other"]);
        assert_eq!(none.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&none.stderr).contains("no queue \"other\""));
        // An outcome that is none: usage, exit 2.
        let bad = run(&["--outcome", "done"]);
        assert_eq!(bad.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&bad.stderr).contains("acked, dead, cancelled, expired"));
    });
}
