//! Random DAGs for the dependency graph's property tests: a node's parents drawn as
//! proptest indices into the nodes before it.

use proptest::sample::Index;

/// The parents of node `i` that `picks` draw: each an index into the nodes before it
/// (none for the first node), sorted, without repeats. Every edge points back, so the
/// nodes in order form a DAG.
pub fn parents_of(i: usize, picks: &[Index]) -> Vec<usize> {
    if i == 0 {
        return Vec::new();
    }
    let mut ps: Vec<usize> = picks.iter().map(|p| p.index(i)).collect();
    ps.sort_unstable();
    ps.dedup();
    ps
}
