"""/docs: Swagger UI served from the assets of the `swagger-ui-bundle` package (no CDN)."""

from __future__ import annotations

import html
import json

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

ASSETS = "/docs/assets"

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{title}</title>
  <link rel="stylesheet" href="{assets}/swagger-ui.css">
  <link rel="icon" type="image/png" href="{assets}/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{assets}/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({config});
  </script>
</body>
</html>
"""


def docs_page(title: str, root_path: str = "") -> str:
    config = {
        "url": f"{root_path}/openapi.json",
        "dom_id": "#swagger-ui",
        "deepLinking": True,
        "layout": "BaseLayout",
        "docExpansion": "list",
        "defaultModelsExpandDepth": 0,
        "displayRequestDuration": True,
        # The default validator badge calls validator.swagger.io: nothing leaves this page.
        "validatorUrl": None,
    }
    # `presets` must be the JavaScript object, not a string, so it is spliced in after dumping.
    text = json.dumps(config)[:-1] + ', "presets": [SwaggerUIBundle.presets.apis]}'
    return _PAGE.format(title=html.escape(title), assets=f"{root_path}{ASSETS}", config=text)


def docs_routes(title: str) -> list[BaseRoute]:
    async def docs(request: Request) -> Response:
        return HTMLResponse(docs_page(title, request.scope.get("root_path", "").rstrip("/")))

    return [
        Route("/docs", docs, methods=["GET", "HEAD"]),
        Mount(ASSETS, app=StaticFiles(directory=str(swagger_ui_path)), name="docs-assets"),
    ]
