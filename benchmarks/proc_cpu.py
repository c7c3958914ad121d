"""CPU seconds of a process tree, from /proc (standard library only: the PyFlink job script imports it too)."""

from __future__ import annotations

import os
from typing import Dict, List


def tree_cpu(root: int = 0) -> float:
    """CPU seconds (user+system, including reaped children) of ``root`` (default: this process) and its descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    children: Dict[int, List[int]] = {}
    stats: Dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        pid, ppid = int(name), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        stats[pid] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    total, todo = 0.0, [root or os.getpid()]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, 0.0)
        todo.extend(children.get(pid, ()))
    return total
