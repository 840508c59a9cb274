"""Read straight from the TPU trace's protobuf (not through xlanb's event reader): per chip,
each program's runs (``XLA Modules`` events), each op's count, seconds, source line and
cost (``XLA Ops`` events, by display name), the chip's busy time (the union of its op events)
and its peak memory bandwidth.
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
    (HERE / "truth.json").write_text(json.dumps(chips, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
