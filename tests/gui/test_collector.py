"""Garbage is collected on the GUI thread only (gui/collector.py): a Qt object kept by a
reference cycle is never freed by a worker thread that happens to allocate."""

from __future__ import annotations

import gc
import threading
import weakref

from PySide6.QtCore import QObject

from taskloom.gui.collector import COLLECTOR


class _Cycle(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.me = self  # only the cyclic collector frees it


def test_a_qt_object_in_a_cycle_is_freed_by_the_gui_thread_not_a_busy_worker(qapp):
    assert COLLECTOR.installed and not gc.isenabled()
    freed_on: list[int] = []
    held = _Cycle()
    weakref.finalize(held, lambda: freed_on.append(threading.get_ident()))
    del held

    def allocate() -> None:  # far past gen0's threshold: automatic collection would run here
        for _ in range(50):
            junk = [[] for _ in range(2000)]
            for item in junk:
                item.append(item)

    worker = threading.Thread(target=allocate)
    worker.start()
    worker.join()
    assert freed_on == []  # the worker collected nothing
    before = COLLECTOR.collections
    COLLECTOR.check()  # what the GUI thread's timer does
    assert freed_on == [threading.get_ident()]  # this (the GUI) thread freed it
    assert COLLECTOR.collections == before + 1


def test_the_collector_checks_again_soon_only_while_it_finds_work(qapp):
    from taskloom.gui.collector import BUSY_INTERVAL_MS, IDLE_INTERVAL_MS

    gc.collect()
    COLLECTOR.check()  # nothing to collect: back off
    assert COLLECTOR._timer is not None and COLLECTOR._timer.interval() == IDLE_INTERVAL_MS
    junk = [[] for _ in range(5000)]
    for item in junk:
        item.append(item)
    del junk
    COLLECTOR.check()
    assert COLLECTOR._timer.interval() == BUSY_INTERVAL_MS
