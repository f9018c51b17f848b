//! Explicit-state search over any [`Model`]: breadth-first exploration of every reachable
//! state, a visited set keyed by the model (which is where symmetry reduction happens), and
//! the shortest counterexample path to any failure. Nothing here knows what a state means.
//!
//! Properties are checked as the states are reached:
//! - *always*: [`Model::always`] on every state, and every step's own checks (a step may
//!   fail, e.g. on a transition the model forbids);
//! - *deadlock freedom*: a state with no enabled action must be quiescent;
//! - *quiescence stays reachable*: from every reachable state some path reaches a quiescent
//!   state, checked at the end by backward reachability over the stored state graph.
//!
//! Counterexamples are paths of actions from the initial state; a model replays them to
//! print whatever it wants to show of each step.

use std::collections::VecDeque;
use std::hash::Hash;
use std::time::Instant;

use rustc_hash::FxHashMap;

/// A transition system the search can explore.
pub trait Model {
    type State: Clone;
    type Action: Copy;
    /// Why a state or a step breaks a property.
    type Violation;
    /// The visited-set key: equal keys are one state to the search. A model with symmetry
    /// reduction returns the same key for every state of an orbit.
    type Key: Eq + Hash;
    /// Mutable scratch lent to every call of one search (encoding buffers, and whatever
    /// the model tallies about the steps it takes); the search hands it back at the end.
    type Work;

    fn new_work(&self) -> Self::Work;

    fn init_state(&self) -> Result<Self::State, Self::Violation>;

    /// The candidate actions from `state`, appended to `actions` in a fixed order (the
    /// order decides which of several shortest counterexamples is found).
    fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>);

    /// The successor of `state` under `action`; `Ok(None)` when the action turns out not
    /// to be enabled.
    fn next_state(
        &self,
        state: &Self::State,
        action: Self::Action,
        work: &mut Self::Work,
    ) -> Result<Option<Self::State>, Self::Violation>;

    /// The invariants every reachable state must satisfy.
    fn always(&self, state: &Self::State) -> Result<(), Self::Violation>;

    /// A state where nothing is left in progress: the only states allowed to have no
    /// enabled action, and the ones every reachable state must still be able to reach.
    fn quiescent(&self, state: &Self::State) -> bool;

    fn key(&self, state: &Self::State, work: &mut Self::Work) -> Self::Key;

    /// Takes back a state the search is done with (expanded, a successor already seen,
    /// or a new one, queued as a clone), so that later [`Model::next_state`] calls can
    /// reuse what it holds.
    fn recycle(&self, _state: Self::State, _work: &mut Self::Work) {}

    /// Called once for each new state that satisfies [`Model::always`].
    fn on_new_state(&self, _state: &Self::State, _work: &mut Self::Work) {}
}

/// Limits and reporting of one search.
#[derive(Clone, Debug)]
pub struct Options {
    /// Give up beyond this many unique states.
    pub max_states: usize,
    /// Print progress to stderr every 100,000 expanded states, under this label.
    pub progress: Option<String>,
}

/// A finished search that found no failure.
pub struct Explored<W> {
    /// Unique states (keys).
    pub states: usize,
    /// Unique (state, successor) pairs of the state graph.
    pub edges: usize,
    pub quiescent_states: usize,
    /// Breadth-first depth of the deepest state.
    pub depth: usize,
    pub work: W,
}

/// What failed, with the actions that lead there from the initial state.
#[derive(Clone, Debug)]
pub enum Finding<A, V> {
    /// The initial state could not be built.
    Init(V),
    /// The state `path` reaches breaks an invariant.
    Always { path: Vec<A>, violation: V },
    /// Taking `action` after `path` fails.
    Step {
        path: Vec<A>,
        action: A,
        violation: V,
    },
    /// The state `path` reaches has no enabled action and is not quiescent.
    Deadlock { path: Vec<A> },
    /// `stuck` states cannot reach a quiescent state; `path` reaches the shallowest.
    Liveness { path: Vec<A>, stuck: usize },
    /// More than `limit` states.
    StateLimit { limit: usize },
}

/// A failed search: the finding and how many unique states were known when it was made.
#[derive(Clone, Debug)]
pub struct Counterexample<A, V> {
    pub finding: Finding<A, V>,
    pub states_explored: usize,
}

type Failed<M> = Counterexample<<M as Model>::Action, <M as Model>::Violation>;

/// Explores every state reachable from the model's initial state, breadth first.
pub fn bfs<M: Model>(model: &M, opts: &Options) -> Result<Explored<M::Work>, Failed<M>> {
    let mut s = Bfs::new(model, opts);
    let init = model
        .init_state()
        .map_err(|v| s.fail(Finding::Init(v), 0))?;
    s.admit_initial(init)?;
    while let Some((id, st)) = s.queue.pop_front() {
        s.report_progress(id);
        s.expand(id, &st)?;
        model.recycle(st, &mut s.work);
    }
    let n = s.depth.len();
    s.visited = FxHashMap::default();
    if let Some((bad, stuck)) = cannot_reach(&s.succ_start, &s.succ, &s.quiescent) {
        let path = s.path_to(bad as u32);
        return Err(s.fail(Finding::Liveness { path, stuck }, n));
    }
    Ok(Explored {
        states: n,
        edges: s.succ.len(),
        quiescent_states: s.quiescent.iter().filter(|&&q| q).count(),
        depth: s.depth.iter().copied().max().unwrap_or(0) as usize,
        work: s.work,
    })
}

/// The search's state: visited set, parent links and the state graph.
struct Bfs<'a, M: Model> {
    model: &'a M,
    opts: &'a Options,
    work: M::Work,
    visited: FxHashMap<M::Key, u32>,
    /// `parents[id - 1]`: the parent of state `id` and the action taken from the parent's
    /// stored representative (state 0 is the initial state).
    parents: Vec<(u32, M::Action)>,
    /// Breadth-first depth of each state, by id; its length is the number of states.
    depth: Vec<u16>,
    quiescent: Vec<bool>,
    /// Successor lists in CSR form (states are expanded in id order).
    succ_start: Vec<u64>,
    succ: Vec<u32>,
    queue: VecDeque<(u32, M::State)>,
    t0: Instant,
    actions: Vec<M::Action>,
    succ_ids: Vec<u32>,
}

impl<'a, M: Model> Bfs<'a, M> {
    fn new(model: &'a M, opts: &'a Options) -> Bfs<'a, M> {
        Bfs {
            model,
            opts,
            work: model.new_work(),
            visited: FxHashMap::default(),
            parents: Vec::new(),
            depth: Vec::new(),
            quiescent: Vec::new(),
            succ_start: vec![0],
            succ: Vec::new(),
            queue: VecDeque::new(),
            t0: Instant::now(),
            actions: Vec::new(),
            succ_ids: Vec::new(),
        }
    }

    fn fail(&self, finding: Finding<M::Action, M::Violation>, n: usize) -> Failed<M> {
        Counterexample {
            finding,
            states_explored: n,
        }
    }

    fn admit_initial(&mut self, init: M::State) -> Result<(), Failed<M>> {
        if let Err(violation) = self.model.always(&init) {
            let path = Vec::new();
            return Err(self.fail(Finding::Always { path, violation }, 1));
        }
        let key = self.model.key(&init, &mut self.work);
        self.visited.insert(key, 0);
        self.depth.push(0);
        self.quiescent.push(self.model.quiescent(&init));
        self.queue.push_back((0, init));
        Ok(())
    }

    fn report_progress(&self, id: u32) {
        let Some(label) = &self.opts.progress else {
            return;
        };
        if id % 100_000 == 0 {
            eprintln!(
                "{label}: expanded {id}, {} states, depth {}, queue {}, {:.1} s",
                self.depth.len(),
                self.depth[id as usize],
                self.queue.len(),
                self.t0.elapsed().as_secs_f64()
            );
        }
    }

    /// Takes every enabled action from state `id` and records its successors.
    fn expand(&mut self, id: u32, st: &M::State) -> Result<(), Failed<M>> {
        let mut actions = std::mem::take(&mut self.actions);
        actions.clear();
        self.model.actions(st, &mut actions);
        self.succ_ids.clear();
        for &a in &actions {
            let next = match self.model.next_state(st, a, &mut self.work) {
                Ok(Some(n)) => n,
                Ok(None) => continue,
                Err(violation) => {
                    let path = self.path_to(id);
                    let finding = Finding::Step {
                        path,
                        action: a,
                        violation,
                    };
                    return Err(self.fail(finding, self.visited.len()));
                }
            };
            let nid = self.visit(id, a, next)?;
            self.succ_ids.push(nid);
        }
        self.actions = actions;
        if self.succ_ids.is_empty() && !self.quiescent[id as usize] {
            let path = self.path_to(id);
            return Err(self.fail(Finding::Deadlock { path }, self.visited.len()));
        }
        self.succ_ids.sort_unstable();
        self.succ_ids.dedup();
        self.succ.extend_from_slice(&self.succ_ids);
        self.succ_start.push(self.succ.len() as u64);
        Ok(())
    }

    /// The id of `next`, reached from state `parent` by `a`; a new state is checked and
    /// queued.
    fn visit(&mut self, parent: u32, a: M::Action, next: M::State) -> Result<u32, Failed<M>> {
        let key = self.model.key(&next, &mut self.work);
        if let Some(&n) = self.visited.get(&key) {
            self.model.recycle(next, &mut self.work);
            return Ok(n);
        }
        let nid = self.depth.len() as u32;
        self.visited.insert(key, nid);
        self.parents.push((parent, a));
        self.depth.push(self.depth[parent as usize] + 1);
        if let Err(violation) = self.model.always(&next) {
            let path = self.path_to(nid);
            return Err(self.fail(Finding::Always { path, violation }, self.visited.len()));
        }
        self.model.on_new_state(&next, &mut self.work);
        self.quiescent.push(self.model.quiescent(&next));
        if self.depth.len() > self.opts.max_states {
            let limit = self.opts.max_states;
            return Err(self.fail(Finding::StateLimit { limit }, self.depth.len()));
        }
        // Queued as a clone sized to what it holds: `next` may have been built in the
        // buffers of a larger spent state, and the queue holds millions.
        self.queue.push_back((nid, next.clone()));
        self.model.recycle(next, &mut self.work);
        Ok(nid)
    }

    /// The actions from the initial state to state `id`, following the parent links.
    fn path_to(&self, mut id: u32) -> Vec<M::Action> {
        let mut v = Vec::new();
        while id != 0 {
            let (p, a) = self.parents[id as usize - 1];
            v.push(a);
            id = p;
        }
        v.reverse();
        v
    }
}

/// The states of a graph (successors in CSR form) from which no `goal` state is
/// reachable: the first of them by id (the shallowest, ids being breadth-first) and how
/// many there are. `None` when every state can reach a goal.
fn cannot_reach(succ_start: &[u64], succ: &[u32], goal: &[bool]) -> Option<(usize, usize)> {
    let n = goal.len();
    let (pred_start, pred) = predecessors(succ_start, succ, n);
    let mut good = goal.to_vec();
    let mut stack: Vec<u32> = (0..n as u32).filter(|&i| goal[i as usize]).collect();
    while let Some(t) = stack.pop() {
        for &p in &pred[pred_start[t as usize] as usize..pred_start[t as usize + 1] as usize] {
            if !good[p as usize] {
                good[p as usize] = true;
                stack.push(p);
            }
        }
    }
    let first = (0..n).find(|&i| !good[i])?;
    Some((first, (0..n).filter(|&i| !good[i]).count()))
}

/// The reverse of a CSR graph of `n` nodes, in CSR form.
fn predecessors(succ_start: &[u64], succ: &[u32], n: usize) -> (Vec<u64>, Vec<u32>) {
    let mut pred_start = vec![0u64; n + 1];
    for &t in succ {
        pred_start[t as usize + 1] += 1;
    }
    for i in 0..n {
        pred_start[i + 1] += pred_start[i];
    }
    let mut fill = pred_start.clone();
    let mut pred = vec![0u32; succ.len()];
    for s in 0..n {
        for &t in &succ[succ_start[s] as usize..succ_start[s + 1] as usize] {
            pred[fill[t as usize] as usize] = s as u32;
            fill[t as usize] += 1;
        }
    }
    (pred_start, pred)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter from 0 that steps up by one or two and wraps to 0 above `top`; 0 is
    /// quiescent. `forbid3` makes 3 break the invariant; `dead` has no action; `trap` only
    /// steps to itself.
    #[derive(Default)]
    struct Counter {
        top: u8,
        forbid3: bool,
        dead: Option<u8>,
        trap: Option<u8>,
    }

    impl Model for Counter {
        type State = u8;
        type Action = u8;
        type Violation = String;
        type Key = u8;
        type Work = ();

        fn new_work(&self) {}
        fn init_state(&self) -> Result<u8, String> {
            Ok(0)
        }
        fn actions(&self, s: &u8, out: &mut Vec<u8>) {
            if Some(*s) == self.trap {
                out.push(0);
            } else if Some(*s) != self.dead {
                out.extend([1, 2]);
            }
        }
        fn next_state(&self, s: &u8, a: u8, _: &mut ()) -> Result<Option<u8>, String> {
            let n = s + a;
            Ok(Some(if n > self.top { 0 } else { n }))
        }
        fn always(&self, s: &u8) -> Result<(), String> {
            if self.forbid3 && *s == 3 {
                return Err("three".into());
            }
            Ok(())
        }
        fn quiescent(&self, s: &u8) -> bool {
            *s == 0
        }
        fn key(&self, s: &u8, _: &mut ()) -> u8 {
            *s
        }
    }

    fn search(m: Counter) -> Result<Explored<()>, Counterexample<u8, String>> {
        let opts = Options {
            max_states: 100,
            progress: None,
        };
        bfs(&m, &opts)
    }

    #[test]
    fn explores_every_state_once_with_breadth_first_depths() {
        let Ok(r) = search(Counter {
            top: 4,
            ..Counter::default()
        }) else {
            panic!("the counter passes");
        };
        // States 0 to 4; 4 steps to 0 either way, one edge.
        assert_eq!(
            (r.states, r.edges, r.quiescent_states, r.depth),
            (5, 9, 1, 2)
        );
    }

    #[test]
    fn an_invariant_failure_comes_with_a_shortest_path() {
        let f = search(Counter {
            top: 4,
            forbid3: true,
            ..Counter::default()
        });
        match f.err().map(|f| f.finding) {
            Some(Finding::Always { path, violation }) => {
                assert_eq!((path, violation.as_str()), (vec![1, 2], "three"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_state_without_actions_is_a_deadlock() {
        let f = search(Counter {
            top: 4,
            dead: Some(2),
            ..Counter::default()
        });
        assert!(
            matches!(f.err().map(|f| f.finding), Some(Finding::Deadlock { path }) if path == [2])
        );
    }

    #[test]
    fn a_trap_cannot_reach_quiescence() {
        let f = search(Counter {
            top: 4,
            trap: Some(3),
            ..Counter::default()
        });
        match f.err() {
            Some(Counterexample {
                finding: Finding::Liveness { path, stuck },
                states_explored,
            }) => assert_eq!((path, stuck, states_explored), (vec![1, 2], 1, 5)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_state_limit_stops_the_search() {
        let f = search(Counter {
            top: 200,
            ..Counter::default()
        });
        assert!(matches!(
            f.err().map(|f| f.finding),
            Some(Finding::StateLimit { limit: 100 })
        ));
    }
}
