//! The command line: its parse and its help.

use super::*;

pub(super) fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        rounds: None,
        refill: false,
        items: 100_000,
        pool_items: 20_000,
        throughput: true,
        table_size: false,
        upkeep_off: false,
        live: 10_000,
        flow: 1_000_000,
        vacuum_after: Vec::new(),
        capacity: None,
        tls: false,
        tx: false,
        history: false,
        windows: false,
        procs: None,
        samples: 200,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut num = || -> Result<u64, String> {
            let v = it.next().ok_or(format!("{flag} needs a number"))?;
            v.replace('_', "")
                .parse()
                .map_err(|e| format!("{flag} {v}: {e}"))
        };
        match flag.as_str() {
            "--rounds" => a.rounds = Some(num()? as usize),
            "--items" => a.items = num()?,
            "--pool-items" => a.pool_items = num()?,
            "--live" => a.live = num()?,
            "--flow" => a.flow = num()?,
            "--vacuum-after" => {
                let n = num()?;
                a.vacuum_after.push(n);
            }
            "--table-size" => (a.throughput, a.table_size) = (false, true),
            "--all" => (a.throughput, a.table_size) = (true, true),
            "--upkeep-off" => a.upkeep_off = true,
            "--capacity" => a.capacity = Some(num()? as usize),
            "--refill" => (a.throughput, a.refill) = (false, true),
            "--tls" => (a.throughput, a.tls) = (false, true),
            "--tx" => (a.throughput, a.tx) = (false, true),
            "--history" => (a.throughput, a.history) = (false, true),
            "--windows" => (a.throughput, a.windows) = (false, true),
            "--procs" => (a.throughput, a.procs) = (false, Some(num()? as usize)),
            "--samples" => a.samples = num()? as usize,
            "--help" | "-h" => {
                println!("{HELP}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

pub(super) const HELP: &str = "pg_bench [--rounds N] [--items N] [--pool-items N] [--upkeep-off] [--capacity N]   throughput (3 rounds)
pg_bench --refill [--rounds N] [--items N]                  fresh / drained-VACUUMed-refilled rounds (30)
pg_bench --table-size [--live N] [--flow N] [--vacuum-after N]...
pg_bench --all                                               throughput, then table size
pg_bench --tls [--rounds N] [--items N] [--pool-items N]     plain text vs TLS (3 rounds)
pg_bench --tx [--samples N]                                  commit-to-start latency, push_in vs push
pg_bench --history [--rounds N] [--pool-items N]             Pool(4) with the record of finished jobs off vs on
pg_bench --procs N [--capacity N] [--rounds N] [--items N]  N worker processes (Pool(4) each), one producer: without vs with a capacity
pg_bench --windows [--rounds N] [--pool-items N]             Pool(4) with the key windows' triggers dropped vs in place
LEASEQ_PG_URL sets the server (default host=127.0.0.1 port=5432 user=postgres dbname=test)";
