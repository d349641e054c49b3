"""/docs: Swagger UI served from local assets (no CDN)."""

from __future__ import annotations

from starlette.routing import BaseRoute


def docs_routes() -> list[BaseRoute]:
    return []
