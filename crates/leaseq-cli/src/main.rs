//! `leaseq`: the operator's command line for SQLite and PostgreSQL queues (see the README
//! and `leaseq --help`). Reads change nothing; writes go through the store's operator API.
//!
//! Exit status: 0 done, 1 failed, 2 usage.

mod args;
mod error;
mod history;
mod operate;
mod output;
mod postgres;
mod schedules;
mod show;
mod sqlite;
mod web;
mod workflows;
mod workflows_show;
mod write;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, StoreCmd};
use crate::error::CliError;

fn main() -> ExitCode {
    // Usage errors exit 2 (clap's own), `--help` and `--version` 0.
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("leaseq: no runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result: Result<(), CliError> = rt.block_on(async {
        match cli.store {
            StoreCmd::Sqlite { file, command } => sqlite::run(&file, command).await,
            StoreCmd::Postgres {
                url,
                schema,
                command,
            } => postgres::run(&url, &schema, command).await,
            StoreCmd::Web { store } => web::run(store).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("leaseq: {e}");
            e.exit_code()
        }
    }
}
