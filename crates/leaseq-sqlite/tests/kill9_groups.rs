//! Ordered groups through `kill -9`: the parent pushes four groups of 30 items (each group
//! whole, one after the other); a child runs a pool of four workers on the file, printing
//! each start; the parent kills it with SIGKILL after a few starts and restarts it, five
//! times, then drains what is left. Every group's starts, across every process, are its
//! items in push order (an item started again after a kill cut its run is the same item
//! again, never one of its group before it), and no process ran two of a group at once.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leaseq_async::{Config, Job, Pool, Push};
use leaseq_sqlite::BytesCodec;
use leaseq_test_kit::child;
use leaseq_test_kit::sqlite::{shut, BytesQueue as Queue};

const GROUPS: u8 = 4;
const ITEMS: u8 = 30;
const KILLS: usize = 5;

fn queue(path: &Path) -> Queue {
    // Enough attempts that the kills' cut leases never dead-letter an item.
    let config = Config::new(Duration::from_secs(30)).with_max_attempts(50);
    leaseq_test_kit::sqlite::open(path, config, BytesCodec)
}

/// The child: a pool on the file, each start printed (`S g n`), a second item of a group
/// running at once printed as `V g`; runs until killed.
#[test]
fn kill9_groups_child() {
    let Some([path]) = child::vars("LEASEQ_KILL9G_", ["PATH"]) else {
        return;
    };
    let q = queue(Path::new(&path));
    let running = Arc::new(Mutex::new(Vec::<u8>::new()));
    let pool = Pool::builder(q.clone()).workers(4).spawn({
        move |job: Job<Vec<u8>>| {
            let running = running.clone();
            async move {
                let (g, n) = (job.item[0], job.item[1]);
                {
                    let mut r = running.lock().unwrap();
                    if r.contains(&g) {
                        println!("V {g}");
                    }
                    r.push(g);
                }
                println!("S {g} {n}");
                smol::Timer::after(Duration::from_millis(3)).await;
                running.lock().unwrap().retain(|x| *x != g);
                Ok(())
            }
        }
    });
    smol::block_on(async {
        q.wait_empty().await;
        println!("DONE");
        smol::Timer::after(Duration::from_secs(3600)).await;
    });
    drop(pool);
}

/// A line of the child's from its marker on (the test harness prints `test NAME ... ` with
/// no newline before the handler's first line).
fn marked(line: &str) -> String {
    ["S ", "V ", "DONE"]
        .iter()
        .find_map(|m| line.find(m))
        .map_or_else(String::new, |i| line[i..].to_string())
}

#[test]
fn a_group_keeps_push_order_through_kill_9() {
    let path = leaseq_test_kit::sqlite::temp("kill9-groups");
    let q = queue(&path);
    smol::block_on(async {
        for g in 0..GROUPS {
            for n in 0..ITEMS {
                q.push_with(vec![g, n], Push::new().group([g]))
                    .await
                    .unwrap();
            }
        }
    });
    shut(q);
    let mut lines = Vec::new();
    for k in 0..KILLS {
        let env = [("LEASEQ_KILL9G_PATH", path.clone().into_os_string())];
        let mut child = child::command("kill9_groups_child", &env)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut starts = 0;
        let mut it = out.lines();
        for line in it.by_ref() {
            let line = marked(&line.unwrap());
            starts += usize::from(line.starts_with("S "));
            let done = line == "DONE";
            lines.push(line);
            if done || starts >= 6 + 3 * k {
                break;
            }
        }
        child.kill().expect("SIGKILL the child");
        child.wait().unwrap();
        // What it printed before it died.
        lines.extend(it.map_while(Result::ok).map(|l| marked(&l)));
    }
    // The last process drains what is left, one at a time.
    let q = queue(&path);
    assert!(
        q.stats().live() > 0,
        "the kills came before the work was done"
    );
    smol::block_on(async {
        while q.stats().live() > 0 {
            let d = q.receive_timeout(Duration::from_secs(60)).await.unwrap();
            lines.push(format!("S {} {}", d.item()[0], d.item()[1]));
            d.ack().await.unwrap();
        }
    });
    shut(q);
    assert!(
        !lines.iter().any(|l| l.starts_with("V ")),
        "two of a group at once"
    );
    let mut per_group: BTreeMap<u8, Vec<u8>> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.starts_with("S ")) {
        let mut p = l[2..].split(' ').map(|x| x.parse::<u8>().unwrap());
        let (g, n) = (p.next().unwrap(), p.next().unwrap());
        let seen = per_group.entry(g).or_default();
        // A run cut by the kill starts again: the same item, at once.
        if seen.last() != Some(&n) {
            seen.push(n);
        }
    }
    for g in 0..GROUPS {
        assert_eq!(
            per_group.get(&g).cloned().unwrap_or_default(),
            (0..ITEMS).collect::<Vec<_>>(),
            "group {g}"
        );
    }
    leaseq_test_kit::sqlite::remove(&path);
}
