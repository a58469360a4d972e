//! The Postgres store over TLS beside the same store in plain text, in one run on the same
//! server (`pg_bench --tls`): rounds of [`run_store`] and [`run_pool`] with `sslmode=disable`
//! and with TLS, in an order that alternates from round to round, after a discarded warm-up
//! of each. TLS is `verify-full` against `LEASEQ_PG_TLS_CA` when that names the server's CA
//! (as `.ci/pg-tls` makes one), else `require` (encrypted alike; only the handshake, once
//! per connection, differs).

use crate::cpu::process_cpu_time;
use crate::pg_store_bench::{run_pool, run_store, unique, BenchError};
use leaseq_postgres::Options;

/// One round: items/s of the plain store, TLS store, plain pool, TLS pool (pools 0 if
/// skipped), then this process's CPU time per item (µs) of the plain and the TLS store
/// (the client's side of the encryption, less sensitive to a loaded machine than rates).
pub type TlsRound = [f64; 6];

/// The connection strings: plain, and TLS (with its mode, for the record).
pub fn urls(url: &str) -> (String, String) {
    let tls = match std::env::var("LEASEQ_PG_TLS_CA") {
        Ok(ca) => format!("{url} sslmode=verify-full sslrootcert={ca}"),
        Err(_) => format!("{url} sslmode=require"),
    };
    (format!("{url} sslmode=disable"), tls)
}

/// Runs `rounds` rounds of `items` through the store (4 workers, claims of 16) and
/// `pool_items` through a pool (0: none), each plain and over TLS, in `schema`.
pub async fn run_tls_rounds(
    url: &str,
    schema: &str,
    rounds: usize,
    items: u64,
    pool_items: u64,
) -> Result<Vec<TlsRound>, BenchError> {
    let (plain, tls) = urls(url);
    let store = |u: String, n: u64| async move {
        let q = unique("bench-tls");
        Ok::<f64, BenchError>(
            run_store(&u, schema, &q, Options::new(), n, 4, 16)
                .await?
                .items_per_sec,
        )
    };
    let pool = |u: String, n: u64| async move {
        if n == 0 {
            return Ok::<f64, BenchError>(0.0);
        }
        let q = unique("bench-tls-pool");
        Ok(run_pool(&u, schema, &q, n, 4, 0, None).await?.items_per_sec)
    };
    // Warm-up, discarded.
    store(plain.clone(), items / 10).await?;
    store(tls.clone(), items / 10).await?;
    let mut out = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let mut r = [0.0; 6];
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let u = if i == 0 { plain.clone() } else { tls.clone() };
            let cpu = process_cpu_time();
            r[i] = store(u.clone(), items).await?;
            if let (Some(a), Some(b)) = (cpu, process_cpu_time()) {
                r[4 + i] = (b - a).as_secs_f64() * 1e6 / items as f64;
            }
            r[2 + i] = pool(u, pool_items).await?;
        }
        out.push(r);
    }
    Ok(out)
}
