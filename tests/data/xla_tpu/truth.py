"""Read straight from the TPU trace's protobuf (not through xlanb's event reader): per chip,
each program's runs (``XLA Modules`` events), each op's count, seconds, source line and
cost (``XLA Ops`` events, by display name), the chip's busy time (the union of its op events),
its peak memory bandwidth, and its memory events (the host's, by ``index_on_host``).
Writes ``truth.json`` beside this file.

    .venv/bin/python tests/data/xla_tpu/truth.py
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from xlanb.formats.xspace import _build_messages

HERE = Path(__file__).parent
TRACE = HERE / "v6e4_inference" / "tpu_inference_2.xplane.pb"


def main() -> None:
    space = _build_messages()["XSpace"]()
    space.ParseFromString(TRACE.read_bytes())
    chips: dict[str, dict] = {}
    for plane in space.planes:
        if not plane.name.startswith("/device:TPU:"):
            continue
        metadata = dict(plane.event_metadata)
        runs: dict[str, int] = defaultdict(int)
        ops: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        intervals = []
        sources: dict[str, str] = {}
        costs: dict[str, dict[str, int]] = {}
        for line in plane.lines:
            for event in line.events:
                if line.name == "XLA Modules":
                    module = re.sub(r"\(\d+\)$", "", metadata[event.metadata_id].name)
                    runs[module] += 1
                elif line.name == "XLA Ops":
                    op_metadata = metadata[event.metadata_id]
                    for stat in op_metadata.stats:
                        name = plane.stat_metadata[stat.metadata_id].name
                        if name == "source":
                            sources[op_metadata.display_name] = stat.str_value
                        elif name in ("flops", "bytes_accessed"):
                            costs.setdefault(op_metadata.display_name, {})[name] = (
                                stat.int64_value or stat.uint64_value
                            )
                    op = ops[op_metadata.display_name]
                    op[0] += 1
                    op[1] += event.duration_ps / 1e12
                    intervals.append((event.offset_ps, event.offset_ps + event.duration_ps))
        busy, reach = 0, None
        for start, end in sorted(intervals):
            if reach is None or start > reach:
                busy += end - start
                reach = end
            elif end > reach:
                busy += end - reach
                reach = end
        chips[plane.name] = {
            "runs": dict(runs),
            "ops": {name: {"count": c, "seconds": s} for name, (c, s) in sorted(ops.items())},
            "busy_seconds": busy / 1e12,
            "sources": dict(sorted(sources.items())),
            "costs": dict(sorted(costs.items())),
            "peak_hbm_bytes_per_second": next(
                stat.double_value * 1e9
                for stat in plane.stats
                if plane.stat_metadata[stat.metadata_id].name == "peak_hbm_bw_gigabytes_per_second"
            ),
        }
    memory: dict[int, list[int]] = defaultdict(list)  # chip -> bytes in use after each event
    for plane in space.planes:
        metadata = dict(plane.event_metadata)
        names = {key: stat.name for key, stat in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                if metadata[event.metadata_id].name not in (
                    "MemoryAllocation",
                    "MemoryDeallocation",
                ):
                    continue
                stats = {names[stat.metadata_id]: stat for stat in event.stats}
                chip = stats["index_on_host"].int64_value or stats["index_on_host"].uint64_value
                allocated = stats["bytes_allocated"]
                memory[chip].append(allocated.int64_value or allocated.uint64_value)
    for chip, in_use in memory.items():
        chips[f"/device:TPU:{chip}"]["memory_events"] = len(in_use)
        chips[f"/device:TPU:{chip}"]["most_bytes_in_use"] = max(in_use)
    (HERE / "truth.json").write_text(json.dumps(chips, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
