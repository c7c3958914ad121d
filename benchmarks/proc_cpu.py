"""CPU seconds of a process tree, from /proc (standard library only: the PyFlink job script imports it too)."""

from __future__ import annotations

import os
from typing import Dict, List


def tree_cpu_by_pid(root: int = 0, reaped: bool = False) -> Dict[int, float]:
    """CPU seconds (user+system) of ``root`` (default: this process) and each of its descendants now; with
    ``reaped``, each process's figure includes its reaped children's."""
    tick = os.sysconf("SC_CLK_TCK")
    children: Dict[int, List[int]] = {}
    stats: Dict[int, float] = {}
    last = 15 if reaped else 13  # utime stime [cutime cstime]
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
        stats[pid] = sum(int(x) for x in fields[11:last]) / tick
    out: Dict[int, float] = {}
    todo = [root or os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in stats:
            out[pid] = stats[pid]
        todo.extend(children.get(pid, ()))
    return out


def tree_cpu(root: int = 0) -> float:
    """CPU seconds (user+system, including reaped children) of ``root`` (default: this process) and its descendants."""
    return sum(tree_cpu_by_pid(root, reaped=True).values())
