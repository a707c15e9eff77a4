#!/usr/bin/env python3
"""Checks every #include "layer/..." in src/ against the layer table of ../shared/STYLE.md:
a layer may include only itself and the layers listed for it. Exits 1 listing violations."""
import pathlib
import re
import sys

ALLOWED = {
    "support": set(),
    "ir": {"support"},
    "target": {"support"},
    "expr": {"ir", "target", "support"},
    "verify": {"ir", "target", "support"},
    "opt": {"ir", "target", "support"},
    "search": {"expr", "verify", "opt", "ir", "target", "support"},
    "rewrite": {"expr", "verify", "opt", "ir", "target", "support"},
    "codegen": {"opt", "ir", "target", "support"},
    "runtime": {"codegen", "ir", "target", "support"},
    "driver": {"search", "rewrite", "codegen", "runtime", "expr", "verify", "opt", "ir",
               "target", "support"},
}

def main() -> int:
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    bad = []
    for f in sorted(src.rglob("*")):
        if f.suffix not in {".h", ".cc", ".cu", ".cuh"}:
            continue
        layer = f.relative_to(src).parts[0]
        if layer not in ALLOWED:
            bad.append(f"{f}: folder '{layer}' is not a known layer")
            continue
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
            if m and m.group(1) != layer and m.group(1) not in ALLOWED[layer]:
                bad.append(f"{f}:{n}: layer '{layer}' may not include '{m.group(1)}/'")
    for b in bad:
        print(b)
    print(f"layer check: {len(bad)} violation(s)")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
