//! The windows' scenarios, each on the memory store and on Postgres with the same answers:
//! queued, period, live-then, debounce, live.

use super::*;

#[test]
fn queued_holds_the_key_while_waiting_and_lets_it_go_once_leased() {
    let q = KeyWindow::Queued;
    same_on_both(
        &[
            Push("a", "k", q, false),
            Push("b", "k", KeyWindow::Live, false),
            Take,
            Push("c", "k", KeyWindow::Live, false),
            Nack("a"),
            Push("d", "k", q, false),
        ],
        &[
            "a in",
            "b held by a",
            "took a",
            "c in",
            "nack a: true",
            "d held by c",
        ],
    );
}

#[test]
fn period_holds_the_key_from_the_push_whatever_the_item_does() {
    let p = KeyWindow::Period(MIN);
    same_on_both(
        &[
            Push("a", "k", p, false),
            Take,
            Ack("a"),
            Push("b", "k", KeyWindow::Live, false),
            Advance(secs(59)),
            Push("c", "k", p, false),
            Advance(secs(1)),
            Push("d", "k", p, false),
            // d stays live past its period: it no longer holds the key.
            Advance(secs(61)),
            Push("e", "k", KeyWindow::Live, false),
            Take,
            Take,
        ],
        &[
            "a in",
            "took a",
            "ack a: true",
            "b held by a",
            "+59s",
            "c held by a",
            "+1s",
            "d in",
            "+61s",
            "e in",
            "took d",
            "took e",
        ],
    );
}

#[test]
fn live_then_holds_the_key_while_live_and_for_the_period_after() {
    let lt = KeyWindow::LiveThen(secs(30));
    same_on_both(
        &[
            Push("a", "k", lt, false),
            Advance(secs(100)),
            Push("b", "k", KeyWindow::Live, false),
            Take,
            Ack("a"),
            Advance(secs(29)),
            Push("c", "k", KeyWindow::Live, false),
            Advance(secs(1)),
            Push("d", "k", lt, false),
            Take,
            DeadLetter("d"),
            Push("e", "k", KeyWindow::Live, false),
            Advance(secs(30)),
            Push("f", "k", KeyWindow::Live, false),
        ],
        &[
            "a in",
            "+100s",
            "b held by a",
            "took a",
            "ack a: true",
            "+29s",
            "c held by a",
            "+1s",
            "d in",
            "took d",
            "dead d: true",
            "e held by d",
            "+30s",
            "f in",
        ],
    );
}

#[test]
fn debounce_replaces_the_waiting_holder_and_restarts_the_window() {
    let p = KeyWindow::Period(MIN);
    same_on_both(
        &[
            Push("a", "k", p, true),
            Advance(secs(50)),
            Push("b", "k", p, true),
            Advance(secs(50)),
            Push("c", "k", KeyWindow::Live, false),
            Take,
            Push("d", "k", p, true),
            Ack("b"),
            Push("e", "k", p, true),
            Advance(secs(10)),
            Push("f", "k", p, true),
        ],
        &[
            "a in",
            "+50s",
            "b in",
            "+50s",
            "c held by b",
            "took b",
            "d held by b",
            "ack b: true",
            "e held by b",
            "+10s",
            "f in",
        ],
    );
}

#[test]
fn live_is_as_before() {
    same_on_both(
        &[
            Push("a", "k", KeyWindow::Live, false),
            Push("b", "k", KeyWindow::Live, true),
            Take,
            Push("c", "k", KeyWindow::Live, true),
            Ack("b"),
            Push("d", "k", KeyWindow::Live, false),
        ],
        &[
            "a in",
            "b in",
            "took b",
            "c held by b",
            "ack b: true",
            "d in",
        ],
    );
}
