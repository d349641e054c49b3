"""The OpenAPI 3 document of a service, built from its APIs' descriptors."""

from __future__ import annotations

from typing import Any

from runnerkit.service._service import Service

_ERROR_SCHEMA = {
    "type": "object",
    "properties": {"error": {"type": "string"}, "type": {"type": "string"}},
    "required": ["error", "type"],
}


def openapi_document(service: Service) -> dict[str, Any]:
    import runnerkit

    paths: dict[str, Any] = {}
    for api in service.apis.values():
        error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        paths[api.route] = {
            "post": {
                "operationId": api.name,
                "summary": api.name,
                "description": api.doc,
                "tags": list(api.tags),
                "requestBody": api.input.openapi_request_body(),
                "responses": {
                    "200": api.output.openapi_response(),
                    "400": {"description": "Bad input", **error},
                    "413": {"description": "Payload too large", **error},
                    "503": {"description": "Triton unavailable", **error},
                    "500": {"description": "Internal error", **error},
                },
            }
        }
    for probe, text in (("/livez", "Liveness"), ("/readyz", "Readiness"), ("/healthz", "Health")):
        paths[probe] = {
            "get": {"tags": ["infrastructure"], "summary": text, "responses": {"200": {"description": "OK"}}}
        }
    return {
        "openapi": "3.0.3",
        "info": {"title": service.name, "version": runnerkit.__version__},
        "paths": paths,
        "components": {"schemas": {"Error": _ERROR_SCHEMA}},
    }
