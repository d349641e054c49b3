"""tritonserver's own Prometheus metrics (`nv_inference_*`), served next to the API's.

Each sample gets a `runner` label, and families of several tritonservers are merged, so the
text stays valid exposition format (one HELP/TYPE per family, its samples together).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping

import httpx

_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?(?P<rest>\s.*)$")
_META = re.compile(r"^#\s+(?P<kind>HELP|TYPE)\s+(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\s|$)")
FETCH_TIMEOUT = 2.0


def add_label(line: str, key: str, value: str) -> str:
    match = _SAMPLE.match(line)
    if match is None:
        return line
    escaped = value.replace("\\", r"\\").replace('"', r"\"").replace("\n", r"\n")
    labels = f'{key}="{escaped}"' + (f",{match['labels']}" if match["labels"] else "")
    return f"{match['name']}{{{labels}}}{match['rest']}"


def merge(texts: Mapping[str, str]) -> str:
    """One exposition text from several tritonservers' ({runner name: text}), labelled by runner."""
    headers: dict[str, list[str]] = {}
    samples: dict[str, list[str]] = {}
    for runner, text in texts.items():
        family = ""
        for line in text.splitlines():
            if not line.strip():
                continue
            meta = _META.match(line)
            if meta is not None:
                family = meta["name"]
                seen = headers.setdefault(family, [])
                if not any(h.split(None, 2)[1] == meta["kind"] for h in seen):
                    seen.append(line)
                samples.setdefault(family, [])
            elif not line.startswith("#"):
                samples.setdefault(family, []).append(add_label(line, "runner", runner))
    out: list[str] = []
    for family, lines in samples.items():
        out += headers.get(family, [])
        out += lines
    return "\n".join(out) + "\n" if out else ""


async def triton_metrics(addresses: Mapping[str, str]) -> str:
    """Fetch and merge the metrics of every tritonserver ({runner name: metrics URL}).

    A server that does not answer (restarting) gets a comment instead of failing the scrape.
    """
    if not addresses:
        return ""
    async with httpx.AsyncClient(timeout=FETCH_TIMEOUT) as client:

        async def fetch(url: str) -> str | BaseException:
            try:
                response = await client.get(url)
                response.raise_for_status()
                return response.text
            except httpx.HTTPError as exc:
                return exc

        results = await asyncio.gather(*(fetch(url) for url in addresses.values()))
    texts: dict[str, str] = {}
    notes: list[str] = []
    for runner, result in zip(addresses, results):
        if isinstance(result, BaseException):
            reason = str(result) or type(result).__name__
            notes.append(f"# runnerkit: tritonserver metrics of runner {runner!r} unavailable: {reason}")
        else:
            texts[runner] = result
    return merge(texts) + "".join(note.replace("\n", " ") + "\n" for note in notes)
