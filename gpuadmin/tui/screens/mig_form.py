"""Repartition MIG on one GPU: the layout drawn as it is built, only the placements that still fit offered,
and the named layouts the model supports (NVIDIA's mig-parted defaults: all-1g.10gb, all-balanced, ...).

The fitting placements come from the service (the engine's own placement rules), so the form never offers
what the plan would refuse. Running holders are drawn on their instances, as on the node screen; an instance
kept at the same profile@start keeps its holder. Removing a held instance is said at once ("evicts NAME"), and
the plan preempts its holders in the same change set, so the review shows the eviction and asks for the name
to be typed (a non-preemptible holder makes the plan refused, with the rule that says why).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Select, Static
from textual.widgets.option_list import Option

from gpuadmin.render.text import safe
from gpuadmin.service import Service
from gpuadmin.tui.draw import gpu_lines, unwrapped
from gpuadmin.tui.session import Session, error_lines
from gpuadmin.tui.worker import Request

Items = list[dict[str, Any]]


class MigFormScreen(ModalScreen[Items | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="mig.cancel"),
        Binding("ctrl+o", "submit", "Plan it", id="mig.submit"),
        Binding("backspace,x", "remove_last", "Remove last", id="mig.remove_last"),
        Binding("ctrl+l", "clear", "Clear", id="mig.clear"),
        Binding("f", "disable", "MIG off", id="mig.disable"),
    ]

    def __init__(self, session: Session, form: dict[str, Any]) -> None:
        super().__init__()
        self.session = session
        self.form = form
        self.instances: list[tuple[str, int]] = [(p, int(s)) for p, s in form["current"]]
        self._slices = {p["name"]: p for p in form["profiles"]}
        # who runs on each instance now, by profile@start: what a layout that drops the instance evicts
        self.holders: dict[tuple[str, int], list[str]] = {(p, int(s)): list(jobs) for p, s, jobs in form["holders"]}

    def compose(self) -> ComposeResult:
        with Vertical(id="mig-form") as box:
            box.border_title = Text(f"repartition MIG: {safe(self.form['node'])}/{self.form['gpu']} "
                                    f"{safe(self.form['model'])}")
            yield Static("", id="mig-drawing")
            yield Static("", id="mig-evicts")
            named = [(Text(safe(name)), name) for name in self.form["named"]]
            yield Select(named, prompt="named layout (mig-parted)", id="mig-named", compact=True)
            yield Static(Text("placements that still fit (Enter adds one):"), classes="form-note")
            yield OptionList(id="mig-fits")
            yield Static(Text("x remove last  ctrl+l clear  f MIG off  ctrl+o plan it  Esc cancel"),
                         classes="form-note")

    def on_mount(self) -> None:
        self._redraw()
        self.query_one("#mig-fits", OptionList).focus()

    def _board(self) -> dict[str, Any]:
        return {"index": self.form["gpu"], "model": self.form["model"], "mode": "mig",
                "memory_slices": self.form["memory_slices"], "compute_slices": self.form["compute_slices"],
                "instances": [{"profile": p, "start": s, "memory_slices": self._slices[p]["memory_slices"],
                               "compute_slices": self._slices[p]["compute_slices"], "replicas": None,
                               "holders": self.holders.get((p, s), [])}
                              for p, s in sorted(self.instances, key=lambda i: i[1])],
                "holders": [], "replicas": None, "vgpus": [], "vm": None}

    def evicted(self, kept: list[tuple[str, int]]) -> list[tuple[str, int, list[str]]]:
        """The held instances a layout drops, with their holders (profile@start order)."""
        return [(p, s, jobs) for (p, s), jobs in sorted(self.holders.items(), key=lambda h: h[0][1])
                if (p, s) not in kept]

    def _preempt(self, kept: list[tuple[str, int]]) -> list[dict[str, Any]]:
        """A preempt-job change for each holder of an instance the layout drops: the plan evicts them by name."""
        jobs = sorted({job for _, _, held in self.evicted(kept) for job in held})
        return [{"op": "preempt-job", "name": job} for job in jobs]

    def fitting(self, service: Service) -> list[tuple[str, int]]:
        """Every (profile, start) that can join the layout as it stands (on the service worker)."""
        out = []
        node, gpu, instances = self.form["node"], self.form["gpu"], list(self.instances)
        for profile in self.form["profiles"]:
            name = str(profile["name"])
            out += [(name, start) for start in service.mig_free_starts(node, gpu, instances, name)]
        return out

    def _redraw(self) -> None:
        """The layout at once; the placements that still fit when the service worker has them (a newer
        layout's question supersedes an older one's)."""
        width = max(40, self.size.width - 6)
        self.query_one("#mig-drawing", Static).update(unwrapped(gpu_lines(self._board(), width)))
        evicts = Text()
        for profile, start, jobs in self.evicted(self.instances):
            evicts.append(f"removing {profile}@{start} evicts {', '.join(safe(job) for job in jobs)}\n",
                          style="bold")
        evicts.rstrip()
        self.query_one("#mig-evicts", Static).update(evicts)
        fits = self.query_one("#mig-fits", OptionList)
        fits.clear_options()
        fits.add_option(Option(Text("finding the placements that still fit..."), disabled=True))
        self.session.ask(Request("finding the placements that fit", self.fitting, self._show_fits,
                                 failed=lambda failed: self.notify(error_lines(failed), severity="error",
                                                                   markup=False),
                                 owner=self, key=f"mig-fits:{id(self)}"))

    def _show_fits(self, options: list[tuple[str, int]]) -> None:
        fits = self.query_one("#mig-fits", OptionList)
        fits.clear_options()
        if options:
            fits.add_options([Option(Text(f"{p} @{s}  ({self._slices[p]['compute_slices']} compute, "
                                          f"{self._slices[p]['memory_slices']} memory slices)"), id=f"{p}@{s}")
                              for p, s in options])
            fits.highlighted = 0  # Enter adds the first at once
        else:
            fits.add_option(Option(Text("nothing more fits: the GPU is fully carved"), disabled=True))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            profile, _, start = event.option.id.rpartition("@")
            self.instances.append((profile, int(start)))
            self._redraw()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value is not Select.NULL and str(event.value) in self.form["named"]:
            self.instances = [(p, int(s)) for p, s in self.form["named"][str(event.value)]]
            self._redraw()

    def action_remove_last(self) -> None:
        if self.instances:
            self.instances.pop()
            self._redraw()

    def action_clear(self) -> None:
        self.instances = []
        self._redraw()

    def action_disable(self) -> None:
        self.dismiss([*self._preempt([]),
                      {"op": "set-mode", "node": self.form["node"], "gpu": self.form["gpu"], "mode": "full"}])

    def action_submit(self) -> None:
        self.dismiss([*self._preempt(self.instances),
                      {"op": "set-mig", "node": self.form["node"], "gpu": self.form["gpu"],
                       "instances": [{"profile": p, "start": s} for p, s in self.instances]}])

    def action_cancel(self) -> None:
        self.dismiss(None)
