"""The window's docks, saved layout, theme, and what it does when shown, hidden or closed (timers
run only while it is seen)."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDockWidget, QWidget

from .window_parts import WindowParts


class WindowLayout(WindowParts):
    """Part of ``MainWindow`` (a mixin, see ``window_parts``): this module's job."""

    def _dock(self, title: str, widget: QWidget, area) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"{widget.objectName()}Dock")
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        self.addDockWidget(area, dock)
        return dock

    def seen(self) -> bool:
        """Whether a person can see the window (shown, not minimised): timers that
        only redraw stop while it is not."""
        return self.isVisible() and not self.isMinimized()

    def _seen_changed(self) -> None:
        """Shown, hidden, minimised or restored: timers start or stop (and what they
        would have redrawn meanwhile is drawn now)."""
        if not hasattr(self, "_inspector_timer"):
            return
        if self.seen():
            self.inspector.tick()
        self._refresh_status()
        self._pace_inspector()
        self.timeline.wake()

    def _tick_inspector(self) -> None:
        self.inspector.tick()
        self._pace_inspector()

    def _pace_inspector(self) -> None:
        """Tick the inspector when its countdown or a running attempt's duration next
        changes, not every second; not at all while the window is not seen."""
        if not hasattr(self, "_inspector_timer"):
            return  # still being built
        seconds = self.inspector.changes_in() if self.seen() else None
        if seconds is None:
            self._inspector_timer.stop()
        else:
            self._inspector_timer.start(int(min(seconds, 86400.0) * 1000))

    def bring_to_front(self) -> None:
        """A click on the tray or a notification: the window, as it was, in front."""
        if self.isMinimized() or not self.isVisible():
            self.showNormal()
        self.raise_()
        self.activateWindow()

    def _apply_theme(self) -> None:
        self.scene.apply_palette(QGuiApplication.palette())
        self.timeline.update()

    def changeEvent(self, event) -> None:
        if event.type() == event.Type.PaletteChange:
            self._apply_theme()
        super().changeEvent(event)
        if event.type() == event.Type.WindowStateChange:
            self._seen_changed()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self._seen_changed()

    def _restore_settings(self) -> None:
        geometry = self.settings.value("window/geometry")
        state = self.settings.value("window/state")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:
            self.resize(1400, 900)
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)
            self._fit_docks_on_show = False
        else:
            self._fit_docks_on_show = True

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._seen_changed()
        if getattr(self, "_fit_docks_on_show", False):
            # The default dock sizes suit 1400x900; in a small window they left the
            # graph a sliver. Proportions on the first show, unless a layout was saved.
            self._fit_docks_on_show = False
            width, height = self.width(), self.height()
            self.resizeDocks(
                [self.inspector_dock], [min(340, width // 4)], Qt.Orientation.Horizontal
            )
            # Below 700 px the bottom docks get a fifth: the graph keeps half the height.
            share = height // 3 if height >= 700 else height // 5
            self.resizeDocks([self.timeline_dock], [min(260, share)], Qt.Orientation.Vertical)
            if width < 1000:  # the event log's time, task and event columns in view
                self.resizeDocks([self.event_dock], [width * 2 // 5], Qt.Orientation.Horizontal)

    def save_settings(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()

    def closeEvent(self, event) -> None:
        if not self.close_question.may_close():
            event.ignore()
            return
        self.save_settings()
        self.shutdown_views()
        super().closeEvent(event)

    def shutdown_views(self) -> None:
        """Stop listening to the engine; the caller owns the scheduler."""
        self.stop_history()
        self.notices.close()
        self.bridge.close()
        self._status_timer.stop()
        self._inspector_timer.stop()

    def stop_history(self) -> None:
        """The store is about to close: no new reads, no more answers. Does not block;
        ``history_reader.join()`` waits for a read still running. Idempotent."""
        self.timeline.detach_history()
        if self.runs_view is not None:
            self.runs_view.close_view()
        self.forecast_view.close()  # it reads the store's durations too
        if self.history_reader is not None:
            self.history_reader.close()
