"""The graph's topological order (engine/_core/graph.py, engine/_core/order.py).

Ranks: every dependency ranks below its dependents, whatever order tasks and edges
come in. Components: an edge between two of them closes no cycle and is never
searched; the smaller one shifts whole when the edge goes against the order.
"""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from taskloom.engine import CycleError, ManualClock, Scheduler, SyncExecutor
from taskloom.engine._core.order import Components, spread

NAMES = [f"t{i}" for i in range(10)]


def _unstarted() -> Scheduler:
    return Scheduler(clock=ManualClock(), executor=SyncExecutor())


class _Node:
    def __init__(self, task_id: str, rank: float) -> None:
        self.id = task_id
        self.rank = rank


# ------------------------------------------------------------------ order.py alone
def test_spread_places_ranks_a_power_of_two_apart_strictly_between():
    assert spread(1.0, 2.0, 2) == [1.25, 1.5]  # (2 - 1) / 3 rounded down to a power of 2
    assert spread(1.0, 2.0, 3) == [1.25, 1.5, 1.75]
    assert spread(1.0, 1.0, 1) is None
    assert spread(2.0, 1.0, 1) is None
    assert spread(1.0, 1.0 + 2**-52, 1) is None  # no float strictly between


def test_a_shift_moves_every_rank_by_one_amount_or_nothing():
    comps = Components()
    a, b, c = _Node("a", 0.5), _Node("b", 1.75), _Node("c", 3.0)
    comps.unite(a, b)
    comps.unite(b, c)
    comp = comps.of["a"]
    assert comps.of["c"] is comp and (comp.lo, comp.hi) == (0.5, 3.0)
    assert comps.shift(comp, 10.0) == 3
    assert [a.rank, b.rank, c.rank] == [10.5, 11.75, 13.0]
    assert (comp.lo, comp.hi) == (10.5, 13.0)
    fine = _Node("fine", 1.0 + 2**-50)
    comps.unite(a, fine)
    assert comps.shift(comp, 1024.0) is None  # 1024 + 2**-50 is no float: nothing moved
    assert [a.rank, fine.rank] == [10.5, 1.0 + 2**-50]


def test_the_smaller_component_joins_the_larger_and_a_removed_task_leaves():
    comps = Components()
    big = [_Node(f"b{i}", float(i)) for i in range(4)]
    for x, y in zip(big, big[1:], strict=False):
        comps.unite(x, y)
    small = [_Node("s0", 7.0), _Node("s1", 8.0)]
    comps.unite(*small)
    big_comp = comps.of["b0"]
    comps.unite(small[1], big[0])
    assert all(comps.of[n.id] is big_comp for n in big + small)
    assert (big_comp.lo, big_comp.hi) == (0.0, 8.0)
    comps.discard("s0")
    assert "s0" not in comps.of and "s0" not in big_comp.members


# ------------------------------------------------------------------ through the engine
class _CountingDict(dict):
    """The graph's task table, counting look-ups: what a cycle check walks."""

    lookups = 0

    def __getitem__(self, key):
        _CountingDict.lookups += 1
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        _CountingDict.lookups += 1
        return dict.get(self, key, default)


def test_an_edge_against_the_order_between_two_components_walks_no_task():
    # Two chains, the second added above the first; then the first chain's root is
    # made to wait for the second's last task. The order repair used to search the
    # region between the two ranks (thousands of look-ups); no path can join two
    # components, so it checks nothing and shifts the smaller chain whole.
    n = 1_000
    s = _unstarted()
    for prefix in "ab":
        for i in range(n):
            s.add(print, name=f"{prefix}{i}", deps=(f"{prefix}{i - 1}",) if i else ())
    s.add(print, name="x")
    s.add(print, name="y")
    s.add_dependency("x", "y")  # the first edge against the order: components found now
    graph = s._graph
    graph.tasks = _CountingDict(graph.tasks)
    _CountingDict.lookups = 0
    s.add_dependency("a0", f"b{n - 1}")
    assert _CountingDict.lookups < 20, _CountingDict.lookups
    tasks = graph.tasks
    order = sorted(tasks, key=lambda tid: tasks[tid].rank)
    order = [tid for tid in order if tid not in ("x", "y")]
    assert order == [f"b{i}" for i in range(n)] + [f"a{i}" for i in range(n)]
    assert graph.reordered == n + 1  # one chain moved, each task once (and y or x before)
    s.shutdown()


def test_a_graph_added_in_order_keeps_no_components():
    s = _unstarted()
    for i in range(50):
        s.add(print, name=f"t{i}", deps=[f"t{j}" for j in range(max(0, i - 3), i)])
    assert s._graph._comps is None  # nothing to keep: no edge went against the order
    s.add(print, name="late", deps=("t49",))
    s.add(print, name="early", deps=("missing",))
    s.add(print, name="missing", deps=("t0",))  # waited for: ranked below "early"
    assert s._graph._comps is None
    s.shutdown()


def _closes_cycle(edges: dict[str, list[str]], task: str, deps: list[str]) -> bool:
    """Would ``task`` waiting for ``deps`` close a cycle? (edges: task -> what it waits for)"""
    seen, stack = set(), list(deps)
    while stack:
        current = stack.pop()
        if current == task:
            return True
        if current in seen or current not in edges:
            continue
        seen.add(current)
        stack.extend(edges[current])
    return False


class OrderMachine(RuleBasedStateMachine):
    """Tasks added in any order (some waiting for tasks not added yet), edges added
    and removed, tasks removed: after every step each dependency ranks below its
    dependents and both ends of each edge share a component; an add that would close
    a cycle is refused, and leaves every task, edge and rank as it was."""

    def __init__(self) -> None:
        super().__init__()
        self.s = _unstarted()
        self.edges: dict[str, list[str]] = {}  # present task -> its deps (present or not)

    def teardown(self) -> None:
        self.s.shutdown()

    def _state(self):
        graph = self.s._graph
        return (
            {tid: (t.rank, tuple(t.deps), tuple(t.dependents)) for tid, t in graph.tasks.items()},
            {missing: tuple(waiting) for missing, waiting in graph.orphans.items()},
        )

    @rule(
        name=st.sampled_from(NAMES),
        deps=st.lists(st.sampled_from(NAMES), max_size=3, unique=True),
    )
    def add(self, name, deps):
        if name in self.edges:
            return
        if _closes_cycle(self.edges, name, deps):
            before = self._state()
            try:
                self.s.add(print, name=name, deps=deps)
            except CycleError:
                pass
            else:
                raise AssertionError(f"{name} <- {deps} closes a cycle and was added")
            assert self._state() == before
        else:
            self.s.add(print, name=name, deps=deps)
            self.edges[name] = list(deps)

    @rule(data=st.data())
    def add_dependency(self, data):
        if len(self.edges) < 2:
            return
        task, dep = data.draw(st.permutations(sorted(self.edges)))[:2]
        if dep in self.edges[task]:
            return
        if _closes_cycle(self.edges, task, [dep]):
            before = self._state()
            try:
                self.s.add_dependency(task, dep)
            except CycleError:
                pass
            else:
                raise AssertionError(f"{task} <- {dep} closes a cycle and was added")
            assert self._state() == before
        else:
            self.s.add_dependency(task, dep)
            self.edges[task].append(dep)

    @rule(data=st.data())
    def remove_dependency(self, data):
        having = sorted(t for t, deps in self.edges.items() if deps)
        if not having:
            return
        task = data.draw(st.sampled_from(having))
        dep = data.draw(st.sampled_from(self.edges[task]))
        self.s.remove_dependency(task, dep)
        self.edges[task].remove(dep)

    @rule(data=st.data())
    def remove(self, data):
        if not self.edges:
            return
        task = data.draw(st.sampled_from(sorted(self.edges)))
        assert self.s.remove(task)
        del self.edges[task]
        for deps in self.edges.values():
            if task in deps:
                deps.remove(task)

    @invariant()
    def ranked_in_order_and_components_cover_every_edge(self):
        graph = self.s._graph
        tasks = graph.tasks
        assert sorted(tasks) == sorted(self.edges)
        comps = graph._comps.of if graph._comps is not None else None
        for task in tasks.values():
            for dep in task.deps:
                if dep in tasks:
                    assert tasks[dep].rank < task.rank, (dep, task.id)
                    if comps is not None:
                        assert comps[dep] is comps[task.id], (dep, task.id)
        if comps is not None:
            for comp in set(map(id, comps.values())):
                members = next(c for c in comps.values() if id(c) == comp).members
                ranks = [t.rank for t in members.values()]
                lo, hi = comps[next(iter(members))].lo, comps[next(iter(members))].hi
                assert lo <= min(ranks) and max(ranks) <= hi


OrderMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestOrder = OrderMachine.TestCase
