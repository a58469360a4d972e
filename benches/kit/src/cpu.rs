//! CPU time of this process, from `/proc/self/stat` (Linux).

use std::time::Duration;

/// User plus system CPU time consumed by this process so far, or `None` where
/// `/proc/self/stat` is not available.
pub fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the full line: 11 and 12 after the name.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // Linux reports clock ticks; USER_HZ is 100 on every mainstream configuration.
    Some(Duration::from_millis((utime + stime) * 10))
}
